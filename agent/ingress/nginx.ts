import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chown, mkdir, readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { isCustomDomain } from "../../shared/protocol/domains";
import { FeedbackVhost } from "../../shared/protocol/feedback";
import { writeAtomic } from "../disk/write-atomic";
import { AgentError } from "../errors";
import type { Logger } from "../logger";
import { alreadyLoaded, configHash, recordLoaded } from "./loaded";
import { renderMainConfig, renderVhost, type VhostSpec } from "./vhost";

const run = promisify(execFile);

export interface IngressOptions {
  /** the agent's state dir; nginx lives in `<stateDir>/nginx` */
  stateDir: string;
  /** `ip:port` the ingress listens on */
  listen: string;
  /** the edge's secret for this host (shared/edge-proof.ts `edgeSecretFromToken`): its front server lets only proven requests in */
  edgeSecret: string;
  log: Logger;
  nginxBin?: string;
}

/**
 * Vhost changes that arrive within this long of the last reload wait for the next one, so a burst
 * of changes (a tenant rotating its feedback token in a loop, many pods starting at once) costs one
 * reload of the shared ingress, not one each: every reload forks new workers while the old ones
 * linger until their connections end, and every pod on the host is served through them.
 */
export const RELOAD_COALESCE_MS = 100;

/** A vhost file's next content (null: removed) and the callers waiting until nginx uses it. */
interface PendingVhost {
  text: string | null;
  waiters: { resolve(): void; reject(err: unknown): void }[];
}

/**
 * The host's ingress: the agent's own nginx master (Debian's binary, our config under
 * `<stateDir>/nginx`, never the system service), one vhost file per pod. Every change of the
 * config goes through one queue. Vhost changes are coalesced: those waiting when the queue gets to
 * them (at most RELOAD_COALESCE_MS after the last reload) are written together, tested with one
 * `nginx -t` and applied with one reload; when the test fails, every file is put back and each
 * change is tried alone, so one bad vhost never blocks the others.
 */
export class Ingress {
  readonly dir: string;
  readonly confPath: string;
  /** where the pods' vhosts listen, behind the front server (renderMainConfig) */
  readonly podsSocket: string;
  private readonly bin: string;
  private readonly log: Logger;
  private queue: Promise<unknown> = Promise.resolve();
  /** vhost changes not yet written, by pod (a newer change of a pod replaces its older one) */
  private pending = new Map<string, PendingVhost>();
  private flushQueued = false;
  private lastReloadAt = 0;
  private reloadCount = 0;

  constructor(private readonly opts: IngressOptions) {
    this.dir = join(opts.stateDir, "nginx");
    this.confPath = join(this.dir, "nginx.conf");
    this.bin = opts.nginxBin ?? "nginx";
    this.podsSocket = podsSocketPath(this.dir);
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

  /** Reloads this ingress has sent its master since it was made (tests read it to see coalescing). */
  get reloads(): number {
    return this.reloadCount;
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
      await mkdir(dirname(this.podsSocket), { recursive: true, mode: 0o755 });
      await writeAtomic(
        this.confPath,
        renderMainConfig({
          dir: this.dir,
          listen: this.opts.listen,
          podsSocket: this.podsSocket,
          edgeSecret: this.opts.edgeSecret,
          user,
        }),
      );
      const pid = await this.masterPid();
      // a master that already serves these very files (./loaded.ts): nothing to test or reload
      if (pid && (await alreadyLoaded(this.dir, this.confPath, pid))) {
        this.log.info("reusing running nginx master; its config is unchanged", { pid });
        return;
      }
      // a master that died without its goodbye leaves the socket file behind: binding it would fail
      if (!pid) await rm(this.podsSocket, { force: true });
      await this.nginx("-t", "-q");
      const sha256 = await configHash(this.dir, this.confPath);
      if (pid) {
        this.log.info("reusing running nginx master", { pid });
        // what `nginx -s reload` sends, without another process parsing every vhost again (the
        // config was just tested): at a start with 50 pods, ~10–50 ms before the host takes pods.
        // The start does not wait for the reload; it is recorded once its new workers are up.
        const before = await workersOf(pid);
        this.hup(pid);
        void this.reloaded(pid, before)
          .then((done) => (done ? recordLoaded(this.dir, { pid, sha256 }) : undefined))
          .catch(() => undefined);
      } else {
        await this.nginx();
        const started = await this.masterPid();
        this.log.info("nginx master started", { pid: started, listen: this.opts.listen });
        if (started) await recordLoaded(this.dir, { pid: started, sha256 });
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
    const text = renderVhost(`unix:${this.podsSocket}`, {
      ...v,
      domains: [...new Set([...v.domains, ...custom])],
      ...(feedback ? { feedback } : {}),
    });
    return this.change(v.pod, text);
  }

  /** Queue the pod's vhost change (null: remove it); resolves once nginx uses it. */
  private change(pod: string, text: string | null): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const entry = this.pending.get(pod);
      if (entry) {
        entry.text = text;
        entry.waiters.push({ resolve, reject });
      } else this.pending.set(pod, { text, waiters: [{ resolve, reject }] });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    this.serialize(async () => {
      const wait = this.lastReloadAt + RELOAD_COALESCE_MS - Date.now();
      if (wait > 0) await sleep(wait);
      this.flushQueued = false;
      const batch = this.pending;
      this.pending = new Map();
      await this.apply(batch).catch((err: unknown) => {
        // e.g. a full disk while putting files back: every caller hears it (a settled one ignores it)
        // instead of waiting forever with its pod's lock held
        this.log.error("vhost changes not applied", { error: String(err) });
        for (const p of batch.values()) settle(p, err);
      });
    }).catch((err: unknown) => this.log.error("vhost changes not applied", { error: String(err) }));
  }

  /**
   * Write the batch's vhost files, test them together and reload once; each caller hears its own
   * change's outcome. A change that leaves its file as it is resolves at once.
   */
  private async apply(batch: Map<string, PendingVhost>): Promise<void> {
    const changes: {
      pod: string;
      path: string;
      text: string | null;
      previous: string | null;
      p: PendingVhost;
    }[] = [];
    for (const [pod, p] of batch) {
      const path = this.vhostPath(pod);
      const previous = await readFile(path, "utf8").catch(() => null);
      if (previous === p.text) settle(p);
      else changes.push({ pod, path, text: p.text, previous, p });
    }
    if (changes.length === 0) return;
    const put = (c: (typeof changes)[number], text: string | null) =>
      text === null ? rm(c.path, { force: true }) : writeAtomic(c.path, text);
    const failed = new Map<string, unknown>();
    try {
      await Promise.all(changes.map((c) => put(c, c.text)));
      // removing a vhost cannot break the config: only a batch that writes one is tested
      if (changes.some((c) => c.text !== null)) await this.nginx("-t", "-q");
    } catch (err) {
      // put every file back, then try each change alone, so one bad vhost fails only its own caller
      await Promise.all(changes.map((c) => put(c, c.previous)));
      for (const c of changes) {
        try {
          await put(c, c.text);
          if (changes.length === 1) throw err;
          if (c.text !== null) await this.nginx("-t", "-q");
        } catch (one) {
          await put(c, c.previous);
          failed.set(c.pod, one);
        }
      }
    }
    const applied = changes.filter((c) => !failed.has(c.pod));
    let reloadError: unknown;
    if (applied.length > 0) await this.reload().catch((err: unknown) => (reloadError = err));
    for (const c of changes) {
      const err = failed.get(c.pod) ?? reloadError;
      settle(c.p, err);
    }
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
      const parsed = FeedbackVhost().safeParse(JSON.parse(raw));
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
    const parsed = FeedbackVhost().safeParse(feedback);
    if (!parsed.success) throw new AgentError("bad_request", "invalid feedback settings");
    await mkdir(join(path, ".."), { recursive: true, mode: 0o700 });
    await writeAtomic(path, JSON.stringify(parsed.data));
  }

  /** Remove the pod's vhost (absent is fine) and reload (coalesced like every vhost change). */
  remove(pod: string): Promise<void> {
    return this.change(pod, null);
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
    try {
      await this.reloadNow();
    } finally {
      this.lastReloadAt = Date.now();
    }
  }

  private async reloadNow(): Promise<void> {
    const pid = await this.masterPid();
    const sha256 = await configHash(this.dir, this.confPath);
    if (!pid) {
      // The master is gone (host reboot, someone stopped it): bring it back with the current files.
      this.log.warn("nginx master not running; starting it");
      await this.nginx();
      const started = await this.masterPid();
      if (started) await recordLoaded(this.dir, { pid: started, sha256 });
      return;
    }
    const before = await workersOf(pid);
    // SIGHUP is what `nginx -s reload` sends, without a second process parsing every vhost again
    // (the config was just tested).
    this.hup(pid);
    this.reloadCount++;
    if (before === null) return; // no /proc children file: nothing to wait on
    if (await this.reloaded(pid, before)) await recordLoaded(this.dir, { pid, sha256 });
    else this.log.warn("nginx reload not confirmed within 2 s", { pid });
  }

  /** Whether the reload took effect: new workers up, every old one shutting down (within 2 s). */
  private async reloaded(pid: number, before: number[] | null): Promise<boolean> {
    if (before === null) return false;
    for (let i = 0; i < 200; i++) {
      const now = (await workersOf(pid)) ?? [];
      const fresh = now.some((w) => !before.includes(w));
      const old = now.filter((w) => before.includes(w));
      if (fresh && (await Promise.all(old.map(isShuttingDown))).every(Boolean)) return true;
      await sleep(10);
    }
    return false;
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

function settle(p: PendingVhost, err?: unknown): void {
  for (const w of p.waiters) {
    if (err === undefined) w.resolve();
    else w.reject(err);
  }
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

/**
 * The pods' socket: the front server's workers (nobody, when the master runs as root) connect to it,
 * and a state dir is often private (0700), so as root it lives in /run, named for the ingress's dir.
 */
function podsSocketPath(dir: string): string {
  if (process.getuid?.() !== 0) return join(dir, "run", "pods.sock");
  const key = createHash("sha256").update(dir).digest("hex").slice(0, 16);
  return join("/run/podhost-ingress", `${key}.sock`);
}
