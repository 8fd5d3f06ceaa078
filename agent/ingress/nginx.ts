import { execFile } from "node:child_process";
import { chown, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { isCustomDomain } from "../../shared/protocol/domains";
import { FeedbackVhost } from "../../shared/protocol/feedback";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { renderMainConfig, renderVhost, type VhostSpec } from "./vhost";

const run = promisify(execFile);

export interface IngressOptions {
  /** the agent's state dir; nginx lives in `<stateDir>/nginx` */
  stateDir: string;
  /** `ip:port` the ingress listens on */
  listen: string;
  log: Logger;
  nginxBin?: string;
}

/**
 * The host's ingress: the agent's own nginx master (Debian's binary, our config under
 * `<stateDir>/nginx`, never the system service), one vhost file per pod. Every change of the
 * config goes through one queue: write, `nginx -t`, reload — and on a failed test the previous file
 * is put back, so one bad vhost never blocks the others' reloads.
 */
export class Ingress {
  readonly dir: string;
  readonly confPath: string;
  private readonly bin: string;
  private readonly log: Logger;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: IngressOptions) {
    this.dir = join(opts.stateDir, "nginx");
    this.confPath = join(this.dir, "nginx.conf");
    this.bin = opts.nginxBin ?? "nginx";
    this.log = opts.log.child({ component: "ingress" });
  }

  private serialize<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private args(...more: string[]): string[] {
    return ["-c", this.confPath, "-p", `${this.dir}/`, "-e", join(this.dir, "logs", "error.log"), ...more];
  }

  private async nginx(...more: string[]): Promise<void> {
    try {
      await run(this.bin, this.args(...more), { timeout: 15_000 });
    } catch (err) {
      const e = err as { stderr?: string; message?: string };
      throw new AgentError(
        "internal",
        `nginx ${more.join(" ") || "start"}: ${(e.stderr || e.message || "").trim()}`,
      );
    }
  }

  vhostPath(pod: string): string {
    return join(this.dir, "vhosts", `${pod}.conf`);
  }

  /** The pid of our master if its pid file names a live `nginx: master` started with our config. */
  async masterPid(): Promise<number | null> {
    const raw = await readFile(join(this.dir, "nginx.pid"), "utf8").catch(() => "");
    const pid = Number(raw.trim());
    if (!Number.isInteger(pid) || pid <= 0) return null;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
    return cmdline.startsWith("nginx: master") && cmdline.includes(this.confPath) ? pid : null;
  }

  /** Write nginx.conf, then reload the running master or start one. Safe to call at every agent start. */
  start(): Promise<void> {
    return this.serialize(async () => {
      const temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"];
      const [user] = await Promise.all([
        process.getuid?.() === 0 ? workerUser() : undefined,
        ...["vhosts", "logs", ...temp.map((d) => `tmp/${d}`)].map((d) =>
          mkdir(join(this.dir, d), { recursive: true }),
        ),
      ]);
      // Workers run as nobody and buffer large bodies into the temp dirs.
      if (user) await Promise.all(temp.map((d) => chown(join(this.dir, "tmp", d), user.uid, user.gid)));
      await writeAtomic(this.confPath, renderMainConfig({ dir: this.dir, listen: this.opts.listen, user }));
      await this.nginx("-t", "-q");
      const pid = await this.masterPid();
      if (pid) {
        this.log.info("reusing running nginx master", { pid });
        // what `nginx -s reload` sends, without another process parsing every vhost again (the
        // config was just tested): at a start with 50 pods, ~10–50 ms before the host takes pods
        this.hup(pid);
      } else {
        await this.nginx();
        this.log.info("nginx master started", { pid: await this.masterPid(), listen: this.opts.listen });
      }
    });
  }

  /** Graceful stop (tests, and an agent told to uninstall); a master that is not running is fine. */
  stop(): Promise<void> {
    return this.serialize(async () => {
      const pid = await this.masterPid();
      if (!pid) return;
      await this.nginx("-s", "quit");
      for (let i = 0; i < 100 && (await this.masterPid()); i++) await sleep(20);
    });
  }

  /**
   * Render the pod's vhost; a no-op when the file already says the same (the events watcher
   * re-renders on every container start). Resolves once nginx uses the new file.
   */
  async upsert(v: VhostSpec): Promise<void> {
    const custom = await this.customDomains(v.pod);
    const feedback = await this.feedback(v.pod);
    const text = renderVhost(this.opts.listen, {
      ...v,
      domains: [...new Set([...v.domains, ...custom])],
      ...(feedback ? { feedback } : {}),
    });
    return this.serialize(async () => {
      const path = this.vhostPath(v.pod);
      const previous = await readFile(path, "utf8").catch(() => null);
      if (previous === text) return;
      await writeAtomic(path, text);
      try {
        await this.nginx("-t", "-q");
      } catch (err) {
        if (previous === null) await rm(path, { force: true });
        else await writeAtomic(path, previous);
        throw err;
      }
      await this.reload();
    });
  }

  private customDomainsPath(pod: string): string {
    return join(this.opts.stateDir, "domains", `${pod}.json`);
  }

  /**
   * The pod's verified custom domains (docs/domains.md), served beside its own by every render of
   * its vhost: kept in `<stateDir>/domains/<pod>.json` so restarts and redeploys keep them. Only
   * names that pass the host-name rule again are used, whatever the file says.
   */
  async customDomains(pod: string): Promise<string[]> {
    const raw = await readFile(this.customDomainsPath(pod), "utf8").catch(() => null);
    if (raw === null) return [];
    try {
      const parsed: unknown = JSON.parse(raw);
      return Array.isArray(parsed)
        ? parsed.filter((d): d is string => typeof d === "string" && isCustomDomain(d))
        : [];
    } catch {
      return [];
    }
  }

  /** Remember the pod's custom domains (the next render of its vhost serves them); `[]` forgets them. */
  async setCustomDomains(pod: string, domains: string[]): Promise<void> {
    const bad = domains.find((d) => !isCustomDomain(d));
    if (bad !== undefined) throw new AgentError("bad_request", `invalid domain ${JSON.stringify(bad)}`);
    const path = this.customDomainsPath(pod);
    if (domains.length === 0) {
      await rm(path, { force: true });
      return;
    }
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(path, JSON.stringify(domains));
  }

  private feedbackPath(pod: string): string {
    return join(this.opts.stateDir, "feedback", `${pod}.json`);
  }

  /**
   * The pod's feedback widget settings (docs/feedback.md), injected by every render of its vhost:
   * kept in `<stateDir>/feedback/<pod>.json` like its custom domains. A file that does not pass the
   * protocol's schema again (hand edited, hostile) is ignored: no widget.
   */
  async feedback(pod: string): Promise<FeedbackVhost | null> {
    const raw = await readFile(this.feedbackPath(pod), "utf8").catch(() => null);
    if (raw === null) return null;
    try {
      const parsed = FeedbackVhost.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  /** Remember the pod's feedback settings (the next render of its vhost uses them); null forgets them. */
  async setFeedback(pod: string, feedback: FeedbackVhost | null): Promise<void> {
    const path = this.feedbackPath(pod);
    if (feedback === null) {
      await rm(path, { force: true });
      return;
    }
    const parsed = FeedbackVhost.safeParse(feedback);
    if (!parsed.success) throw new AgentError("bad_request", "invalid feedback settings");
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(path, JSON.stringify(parsed.data));
  }

  /** Remove the pod's vhost (absent is fine) and reload. */
  remove(pod: string): Promise<void> {
    return this.serialize(async () => {
      const path = this.vhostPath(pod);
      const existed = await readFile(path, "utf8").then(
        () => true,
        () => false,
      );
      if (!existed) return;
      await rm(path, { force: true });
      await this.reload();
    });
  }

  async hasVhost(pod: string): Promise<boolean> {
    return readFile(this.vhostPath(pod), "utf8").then(
      () => true,
      () => false,
    );
  }

  private hup(pid: number): void {
    try {
      process.kill(pid, "SIGHUP");
    } catch (err) {
      throw new AgentError("internal", `nginx reload: ${String(err)}`);
    }
  }

  /**
   * Reload and wait until it took effect. `nginx -s reload` only signals the master; it reads the
   * new config, forks new workers, then tells the old ones to close their listening sockets and
   * finish. Until every old worker says "shutting down", one of them may still accept a connection
   * with the old config.
   */
  private async reload(): Promise<void> {
    const pid = await this.masterPid();
    if (!pid) {
      // The master is gone (host reboot, someone stopped it): bring it back with the current files.
      this.log.warn("nginx master not running; starting it");
      await this.nginx();
      return;
    }
    const before = await workersOf(pid);
    // SIGHUP is what `nginx -s reload` sends, without a second process parsing every vhost again
    // (the config was just tested).
    this.hup(pid);
    if (before === null) return; // no /proc children file: nothing to wait on
    for (let i = 0; i < 200; i++) {
      const now = (await workersOf(pid)) ?? [];
      const fresh = now.some((w) => !before.includes(w));
      const old = now.filter((w) => before.includes(w));
      if (fresh && (await Promise.all(old.map(isShuttingDown))).every(Boolean)) return;
      await sleep(10);
    }
    this.log.warn("nginx reload not confirmed within 2 s", { pid });
  }
}

async function workersOf(pid: number): Promise<number[] | null> {
  const raw = await readFile(`/proc/${pid}/task/${pid}/children`, "utf8").catch(() => null);
  return raw === null ? null : raw.trim().split(/\s+/).filter(Boolean).map(Number);
}

async function isShuttingDown(pid: number): Promise<boolean> {
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
  return cmdline === "" || cmdline.includes("shutting down");
}

async function writeAtomic(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, text);
  await rename(tmp, path);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** nobody/nogroup from the host's passwd and group files (Node has no getpwnam). */
async function workerUser(): Promise<{ name: string; group: string; uid: number; gid: number } | undefined> {
  const passwd = await readFile("/etc/passwd", "utf8").catch(() => "");
  const group = await readFile("/etc/group", "utf8").catch(() => "");
  const user = passwd.split("\n").find((l) => l.startsWith("nobody:"));
  const grp =
    group.split("\n").find((l) => l.startsWith("nogroup:")) ??
    group.split("\n").find((l) => l.startsWith("nobody:"));
  if (!user || !grp) return undefined;
  const uid = Number(user.split(":")[2]);
  const gid = Number(grp.split(":")[2]);
  return { name: "nobody", group: grp.split(":")[0] ?? "nogroup", uid, gid };
}
