/**
 * Registers a container host and prints its agent token once.
 *
 *   npm run host:add -- --name h1 --region eu-central --ssh-host h1.example.com \
 *     --ssh-ports 2200-2999 --cpu 16 --memory-mb 65536 --disk-gb 500 \
 *     --ingress-origin https://h1-ingress.example.net [--rotate] [--remote]
 *
 * --ingress-origin: where the edge router reaches this host's ingress (docs/edge.md), its tunnel or
 * public address; without it the host's pods answer 503 through the edge.
 */
import { parseArgs } from "node:util";
import { DEFAULT_REGION } from "../shared/catalog";
import { registerHost } from "./lib/hosts";

const { values } = parseArgs({
  options: {
    name: { type: "string" },
    region: { type: "string", default: DEFAULT_REGION },
    "ssh-host": { type: "string", default: "localhost" },
    "ssh-ports": { type: "string", default: "2200-2999" },
    cpu: { type: "string", default: "16" },
    "memory-mb": { type: "string", default: "32768" },
    "disk-gb": { type: "string", default: "500" },
    "ingress-origin": { type: "string" },
    rotate: { type: "boolean", default: false },
    remote: { type: "boolean", default: false },
    "persist-to": { type: "string" },
  },
});

if (!values.name) {
  console.error(
    "usage: npm run host:add -- --name <name> [--region r] [--ssh-host h] [--ssh-ports 2200-2999] …",
  );
  process.exit(2);
}
const [min, max] = (values["ssh-ports"] ?? "").split("-").map(Number);
try {
  const result = await registerHost(
    {
      name: values.name,
      region: values.region ?? DEFAULT_REGION,
      sshHost: values["ssh-host"] ?? "localhost",
      sshPortMin: min ?? Number.NaN,
      sshPortMax: max ?? Number.NaN,
      cpu: Number(values.cpu),
      memoryMb: Number(values["memory-mb"]),
      diskGb: Number(values["disk-gb"]),
      ...(values["ingress-origin"] ? { ingressOrigin: values["ingress-origin"] } : {}),
    },
    { rotate: values.rotate, remote: values.remote, persistTo: values["persist-to"] },
  );
  console.log(`host ${values.name} ${result.created ? "registered" : "updated"}: ${result.hostId}`);
  console.log("agent token (shown once; run the agent with it):");
  console.log(`  PODHOST_AGENT_TOKEN=${result.token}`);
} catch (error) {
  console.error(`host:add failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
