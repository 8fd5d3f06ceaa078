import { fileURLToPath } from "node:url";
import { POD_BRIDGE_PREFIX } from "../docker/naming";

/**
 * What the host's egress rules must look like, read off `iptables -S` (the filter table). The rules
 * themselves are written by one script only, scripts/host/ensure-egress.sh (host setup and the
 * agent both run it); this is the agent's check that they are still there.
 */
export const EGRESS_SCRIPT = fileURLToPath(new URL("../../scripts/host/ensure-egress.sh", import.meta.url));

/** every pod bridge named by the agent (agent/docker/naming.ts) */
export const POD_BRIDGES = `${POD_BRIDGE_PREFIX}+`;

/** Docker's name for a bridge it named itself: what pod networks made before `phb…` names have. */
export const LEGACY_BRIDGE = /^br-[0-9a-f]{12}$/;

const V4_RANGES = ["169.254.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"];
const V6_RANGES = ["fc00::/7", "fe80::/10"];

/**
 * The rule lines that `save` (one family's `iptables -S`) lacks for pods behind `bridges`;
 * empty when everything is in place.
 */
export function missingRules(save: string, family: 4 | 6, bridges: string[]): string[] {
  const lines = new Set(save.split("\n").map((l) => l.trim()));
  // Every line and each of its leading word runs ("-A X", "-A X -d 10.0.0.0/8", …): a wanted rule is
  // in place when it is one of them (iptables adds its defaults after it, `--reject-with …`). One
  // set lookup per rule, where a scan of every line per rule cost ~3 ms a check on a host whose
  // engine has many networks (a few hundred lines), on the way to the agent's hello.
  const prefixes = new Set<string>();
  for (const line of lines)
    for (let i = line.indexOf(" "); i > 0; i = line.indexOf(" ", i + 1)) prefixes.add(line.slice(0, i));
  const has = (rule: string) => lines.has(rule) || prefixes.has(rule);
  const forward = lines.has("-N DOCKER-USER") ? "DOCKER-USER" : "FORWARD";
  const wanted = [
    "-A PODHOST-HOST -j REJECT",
    ...(family === 4 ? V4_RANGES : V6_RANGES).map((r) => `-A PODHOST-EGRESS -d ${r} -j REJECT`),
    `-A PODHOST-EGRESS -o ${POD_BRIDGES} -j REJECT`,
    ...[POD_BRIDGES, ...bridges].flatMap((b) => [
      `-A INPUT -i ${b} -j PODHOST-HOST`,
      `-A ${forward} -i ${b} -j PODHOST-EGRESS`,
    ]),
  ];
  return wanted.filter((w) => !has(w)).map((w) => `IPv${family} ${w}`);
}
