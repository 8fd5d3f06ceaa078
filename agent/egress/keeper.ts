import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { DockerClient } from "../docker/client";
import { POD_BRIDGE_PREFIX, prefixFilter } from "../docker/naming";
import type { Logger } from "../logger";
import { EGRESS_SCRIPT, LEGACY_BRIDGE, missingRules } from "./rules";

const run = promisify(execFile);

/**
 * Keeps the pod egress rules in place and says whether they are. The host setup installs them
 * (scripts/host/prepare.sh), but a reboot, a firewall reload or an `iptables -F` wipes them while
 * the pods run on: so the agent installs them again when it starts, checks every interval, puts
 * back what went missing with a loud error, and reports a host problem while they cannot be put
 * back — a host that cannot fence its pods takes no new ones (the running ones keep running:
 * stopping a tenant's site is worse than the hole, which the operator is told about).
 *
 * Pod networks made before bridges were named `phb…` keep Docker's `br-<id>`: they are found by
 * the agent's label and get the same jumps by name.
 */
export class EgressKeeper {
  private current: string | null = "the egress rules have not been checked yet";
  private timer: ReturnType<typeof setInterval> | undefined;
  private checking: Promise<void> | undefined;
  private checkedOnce = false;

  constructor(
    private readonly opts: {
      docker: DockerClient;
      namePrefix: string;
      intervalMs: number;
      log: Logger;
      onChange: (problem: string | null) => void;
    },
  ) {}

  /** null when every pod of this host is fenced, else why not */
  get problem(): string | null {
    return this.current;
  }

  /** The first check and install (awaited, so the hello tells the truth), then one every interval. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  check(): Promise<void> {
    this.checking ??= this.attempt().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async attempt(): Promise<void> {
    const { log } = this.opts;
    try {
      const listed = this.legacyBridges();
      const before = await this.missing(listed);
      const bridges = await listed;
      if (before.length > 0) {
        // At start this is the normal install; later it means something removed them under us.
        if (this.checkedOnce)
          log.error("pod egress rules went missing; installing them again", { missing: before });
        else log.info("installing the pod egress rules", { missing: before.length, legacyBridges: bridges });
        await run("bash", [EGRESS_SCRIPT, ...bridges], { timeout: 30_000 });
        const after = await this.missing(bridges);
        if (after.length > 0) throw new Error(`still missing after install: ${after.join("; ")}`);
      }
      this.set(null);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const problem = `pod egress rules cannot be installed: ${message.slice(0, 500)}`;
      if (problem !== this.current)
        log.error("PODS ARE NOT FENCED: egress rules cannot be installed; this host takes no new pods", {
          error: message,
        });
      this.set(problem);
    } finally {
      this.checkedOnce = true;
    }
  }

  /** What `iptables -S` lacks, IPv4 and (where the host has it) IPv6. */
  private async missing(bridges: string[] | Promise<string[]>): Promise<string[]> {
    // both tables and the engine's networks at once: at the agent's start this is on the way to its hello
    const [v4, v6, legacy] = await Promise.all([
      run("iptables", ["-w", "-S"], { timeout: 10_000 }),
      run("ip6tables", ["-w", "-S"], { timeout: 10_000 }).catch(() => undefined),
      bridges,
    ]);
    const missing = missingRules(v4.stdout, 4, legacy);
    if (v6) missing.push(...missingRules(v6.stdout, 6, legacy));
    return missing;
  }

  /** Bridges of this agent's pod networks that Docker named (`br-<id>`), from before `phb…` names. */
  private async legacyBridges(): Promise<string[]> {
    // The engine being down is not a firewall problem: the phb+ rules go in now, these at the next check.
    const networks = await this.opts.docker
      .listNetworks({ filters: prefixFilter(this.opts.namePrefix) })
      .catch((error: unknown) => {
        this.opts.log.warn("pod networks unavailable for the egress check", { error: String(error) });
        return [];
      });
    return networks
      .map((n) => n.Options?.["com.docker.network.bridge.name"] ?? `br-${n.Id.slice(0, 12)}`)
      .filter((b) => !b.startsWith(POD_BRIDGE_PREFIX) && LEGACY_BRIDGE.test(b))
      .sort();
  }

  private set(problem: string | null) {
    if (problem === this.current) return;
    if (problem === null) this.opts.log.info("pod egress rules in place");
    this.current = problem;
    this.opts.onChange(problem);
  }
}
