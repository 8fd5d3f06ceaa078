import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PodDisk } from "../../agent/disk/pod-disk";
import { REPO_ROOT } from "../../bench/support/worker";
import { signUp } from "../e2e/support/api";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import { type DnsDouble, startDnsDouble } from "../support/dns";
import { type GitServer, startGitServer } from "../support/git-server";
import { httpGet } from "../support/http";
import { backupSettled, eventCount, fingerprint, podSh, printOnFailure, staticPodFiles } from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

const run = promisify(execFile);

/**
 * Disk full (docs/reliability.md): the pods' btrfs (one pod's quota, then the whole file system the
 * pods live on) and the agent's state directory are filled in turn, each on a small file system
 * this test makes (a loop-mounted btrfs image, a tmpfs), never one of the machine's own. For each:
 * what needs the space fails with a clear 4xx or operation error naming the full disk, the file a
 * write would replace is intact, a pod that does not write keeps serving, and once the space is
 * freed everything works again. The engine's root is filled by ./engine-full.test.ts, on an engine
 * of its own.
 */
describe("chaos: disk full", () => {
  let dir: string;
  let podRoot: string;
  let stateMount: string;
  let stack: Stack;
  let alice: User;
  let pod: string;
  let mounted: string[] = [];
  let git: GitServer | undefined;
  let dns: DnsDouble;

  const PAGE = "<h1>still here</h1>";
  const OLD = "old content\n";

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "podhost-diskfull-"));
    podRoot = path.join(dir, "pods");
    stateMount = path.join(dir, "state");
    // the pods' disk as production makes it (btrfs, simple quotas), but 1 GiB and the test's own
    await run("bash", [path.join(REPO_ROOT, "scripts/host/ensure-pod-disk.sh")], {
      env: {
        ...process.env,
        PODHOST_POD_DISK_ROOT: podRoot,
        PODHOST_POD_DISK_IMAGE: path.join(dir, "pods.img"),
        PODHOST_POD_DISK_SIZE: "1G",
      },
    });
    mounted.push(podRoot);
    // the agent's state directory on a 64 MiB tmpfs (a directory in it: the stack removes it at stop)
    await mkdir(stateMount);
    await run("mount", ["-t", "tmpfs", "-o", "size=64m,mode=0755", "tmpfs", stateMount]);
    mounted.push(stateMount);
    // custom domains verify through the DNS double (test/e2e/domains.test.ts)
    dns = await startDnsDouble();
    stack = await startStack("diskfull", {
      vars: { DNS_RESOLVER_URL: dns.resolverUrl },
      agentEnv: {
        PODHOST_POD_DISK_ROOT: podRoot,
        PODHOST_STATE_DIR: path.join(stateMount, "agent"),
        PODHOST_HOST_CACHE_MB: "64",
      },
    });
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `full-${stack.prefix.slice(-4)}`;
    await create(alice.api, pod);
    await waitForPodStatus(alice.api, pod, "running", 120_000);
    await write(pod, "index.html", PAGE);
    await write(pod, "notes.txt", OLD);
    await serves(pod);
  }, 300_000);

  afterAll(async () => {
    await stack?.stop().catch((err: unknown) => console.error("stack stop:", err));
    await git?.close();
    await dns?.close();
    // every mount this test made goes, whatever state a failure left (a loop device goes with its mount)
    for (const m of mounted.reverse()) {
      await run("umount", [m]).catch(() => run("umount", ["-l", m]).catch((e: unknown) => console.error(e)));
    }
    mounted = [];
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 300_000);

  afterEach((ctx) => printOnFailure(ctx, stack, (l) => l.level === "error" || l.level === "warn"));

  const { create, write, read, serves } = staticPodFiles(
    () => stack.edgePort,
    () => alice.api,
  );

  /** a write that needs the space: refused with a 4xx naming the full disk, the old file intact */
  const writeRefused = async (name: string, disk: RegExp) => {
    const res = await alice.api.put(`/api/pods/${name}/files/content`, {
      path: "/home/pod_user/app/notes.txt",
      content: "new content ".repeat(50_000),
    });
    expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(500);
    expect(res.body.error).toMatch(disk);
    expect(await read(name, "notes.txt")).toBe(OLD);
    // no temp file of the refused write left behind
    expect(await podSh(alice.api, name, "ls -A ~/app | grep -c '^\\.upload-' || true")).toBe("0");
  };

  const backUp = async (name: string) => {
    const res = await alice.api.post(`/api/pods/${name}/backups`, {});
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return backupSettled(alice.api, name, res.body.id as string, 240_000);
  };

  const volumeOf = (name: string) => `${stack.prefix}-${name}-home`;

  /** a new pod, until it is `running` or `error`; its events' messages */
  const createSettled = async (name: string) => {
    await create(alice.api, name);
    const settled = await waitFor(
      `${name} to settle`,
      async () => {
        const res = await alice.api.get(`/api/pods/${name}`);
        return ["running", "error"].includes(res.body?.status) ? res.body : undefined;
      },
      180_000,
    );
    const events = await alice.api.get(`/api/pods/${name}/events`);
    const messages = (events.body.events as { message: string }[]).map((e) => e.message).join("\n");
    return { status: settled.status as string, messages };
  };

  /** once the space is back: a write lands (freed extents may take a commit to count), a backup completes */
  const worksAgain = async () => {
    await waitFor(
      "a write to land again",
      async () => {
        const res = await alice.api.put(`/api/pods/${pod}/files/content`, {
          path: "/home/pod_user/app/notes.txt",
          content: "after\n",
        });
        return res.status === 200 ? true : undefined;
      },
      60_000,
    );
    expect(await read(pod, "notes.txt")).toBe("after\n");
    await write(pod, "notes.txt", OLD);
    const done = await backUp(pod);
    expect(done.status, JSON.stringify(done)).toBe("completed");
    await serves(pod);
    // the plan keeps one backup: room for the next test's
    const gone = await alice.api.delete(`/api/pods/${pod}/backups/${done.id}`);
    expect(gone.status, JSON.stringify(gone.body)).toBeLessThan(300);
  };

  /** a git deploy of the pod, until it ends (the deployment's view) */
  const deploy = async (name: string) => {
    const res = await alice.api.post(`/api/pods/${name}/git/deploy`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    return waitFor(
      `deployment ${res.body.id} to end`,
      async () => {
        const d = await alice.api.get(`/api/pods/${name}/git/deployments/${res.body.id}`);
        return d.body?.status && !["deploying", "queued"].includes(d.body.status)
          ? { ...d.body, id: res.body.id as string }
          : undefined;
      },
      240_000,
    );
  };

  /** the pod's page through the edge says `text` */
  const shows = async (name: string, text: string) => {
    const page = await httpGet(stack.edgePort, `${name}.pods.localhost`, "/index.html");
    expect(page.status).toBe(200);
    expect(page.body).toContain(text);
  };

  /** a pod connected to a repository of the test's git server */
  const connected = async (name: string, preset: string, repo: string, files: Record<string, string>) => {
    git ??= await startGitServer();
    await git.createRepo(repo, files);
    const res = await alice.api.post("/api/pods", { name, preset, plan_slug: "launch" });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitForPodStatus(alice.api, name, "running", 120_000);
    const linked = await alice.api.post(`/api/pods/${name}/git`, { repo_url: git.url(repo), branch: "main" });
    expect(linked.status, JSON.stringify(linked.body)).toBe(201);
    return git;
  };

  it("a pod's quota full: writes and a backup fail naming the pod's disk; serving goes on; freed, all works", {
    timeout: 600_000,
  }, async () => {
    // plans start at several GiB: the test lowers this pod's limit to 64 MiB on its own file system
    const disk = new PodDisk(podRoot);
    await disk.setLimit(volumeOf(pod), 64 * 1024 ** 2);
    try {
      const fill = await alice.api.post(`/api/pods/${pod}/exec`, {
        command: ["sh", "-c", "head -c 200000000 /dev/zero > ~/fill; echo exit=$?"],
      });
      expect(fill.body.stdout).not.toContain("exit=0");
      await writeRefused(pod, /the pod's disk is full \(its plan's disk limit\)/);
      const failed = await backUp(pod);
      expect(failed.status, JSON.stringify(failed)).toBe("failed");
      expect(failed.error).toMatch(/^the pod's disk is full \(its plan's disk limit\)/);
      await serves(pod);
    } finally {
      await podSh(alice.api, pod, "rm -f ~/fill");
      await disk.setLimit(volumeOf(pod), 5 * 1024 ** 3);
    }
    await worksAgain();
  });

  it("a restore that does not fit the pod's quota: failed naming the pod's disk, the pod's files as they were; freed, restored", {
    timeout: 600_000,
  }, async () => {
    await podSh(alice.api, pod, "head -c 40000000 /dev/urandom > ~/app/big.bin");
    const before = await fingerprint(alice.api, pod);
    const backup = await backUp(pod);
    expect(backup.status, JSON.stringify(backup)).toBe("completed");
    await podSh(alice.api, pod, "rm -f ~/app/big.bin; sync");
    const without = await fingerprint(alice.api, pod);
    /** a restore of the backup, until its event says how it ended */
    const restore = async () => {
      const [done = 0, failed = 0] = await Promise.all(
        ["restore_completed", "restore_failed"].map((t) => eventCount(alice.api, pod, t)),
      );
      const res = await alice.api.post(`/api/pods/${pod}/backups/${backup.id}/restore`);
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      return waitFor(
        "the restore to end",
        async () => {
          if ((await eventCount(alice.api, pod, "restore_completed")) > done)
            return { ok: true, message: "" };
          if ((await eventCount(alice.api, pod, "restore_failed")) === failed) return undefined;
          const list = await alice.api.get(`/api/pods/${pod}/events?type=restore_failed&limit=1`);
          return { ok: false, message: (list.body.events as { message: string }[])[0]?.message ?? "" };
        },
        300_000,
      );
    };
    // 40 MB to unpack beside ~25 MB used, under a 56 MiB limit: the staging cannot hold it
    const disk = new PodDisk(podRoot);
    await disk.setLimit(volumeOf(pod), 56 * 1024 ** 2);
    try {
      await podSh(alice.api, pod, "head -c 24000000 /dev/zero > ~/fill; sync");
      const ended = await restore();
      expect(ended.ok, ended.message).toBe(false);
      expect(ended.message).toMatch(/the pod's disk is full \(its plan's disk limit\)/);
      // nothing swapped: the app as it was, no staging left, still serving
      expect(await fingerprint(alice.api, pod)).toBe(without);
      // the staging is removed after the answer (agent/backups/restore.ts RETIRE)
      await waitFor(
        "the restore's staging to go",
        async () => {
          // one look every 2 s: a pod's exec is rate limited
          await new Promise((resolve) => setTimeout(resolve, 2_000));
          return (await podSh(alice.api, pod, "ls -A ~/.pod/restore 2>/dev/null | wc -l")) === "0"
            ? true
            : undefined;
        },
        60_000,
      );
      await waitForPodStatus(alice.api, pod, "running", 120_000);
      await serves(pod);
    } finally {
      await podSh(alice.api, pod, "rm -f ~/fill; sync");
      await disk.setLimit(volumeOf(pod), 5 * 1024 ** 3);
    }
    const again = await restore();
    expect(again.ok, again.message).toBe(true);
    await waitForPodStatus(alice.api, pod, "running", 120_000);
    expect(await fingerprint(alice.api, pod)).toBe(before);
    await podSh(alice.api, pod, "rm -f ~/app/big.bin");
    expect(await read(pod, "notes.txt")).toBe(OLD);
    await serves(pod);
    // the plan keeps one backup: room for the next test's
    const gone = await alice.api.delete(`/api/pods/${pod}/backups/${backup.id}`);
    expect(gone.status, JSON.stringify(gone.body)).toBeLessThan(300);
  });

  it("the pods' file system full: writes, a backup and a create fail naming the disk; serving goes on; freed, all works", {
    timeout: 600_000,
  }, async () => {
    // the host fills it, not a pod: a file at the top of the btrfs, outside every pod's quota
    const filler = path.join(podRoot, "filler");
    try {
      await run("sh", ["-c", `head -c 2000000000 /dev/zero > ${filler} 2>/dev/null; sync`]).catch(
        () => undefined,
      );
      await writeRefused(pod, /the disk is full/);
      const failed = await backUp(pod);
      expect(failed.status, JSON.stringify(failed)).toBe("failed");
      expect(failed.error).toMatch(/^the host's disk is full/);
      await serves(pod);
      const other = await createSettled(`full2-${stack.prefix.slice(-4)}`);
      expect(other.status, other.messages).toBe("error");
      expect(other.messages).toMatch(
        /the host's disk is full \(no space left on the device the pod's files are on\)/,
      );
      expect(other.messages).not.toContain("/var/lib/docker");
      await serves(pod);
    } finally {
      await rm(filler, { force: true });
      await run("sync");
    }
    await worksAgain();
  });

  it("the agent's state directory full: a create fails naming it; serving goes on; freed, all works", {
    timeout: 600_000,
  }, async () => {
    const filler = path.join(stateMount, "filler");
    try {
      await run("sh", ["-c", `head -c 100000000 /dev/zero > ${filler} 2>/dev/null`]).catch(() => undefined);
      const other = await createSettled(`full3-${stack.prefix.slice(-4)}`);
      expect(other.status, other.messages).toBe("error");
      expect(other.messages).toMatch(/the host agent's disk is full/);
      expect(other.messages).not.toContain(stateMount);
      // a pod's own files are not on the agent's disk
      await write(pod, "notes.txt", "during\n");
      await write(pod, "notes.txt", OLD);
      await serves(pod);
    } finally {
      await rm(filler, { force: true });
    }
    const third = `full4-${stack.prefix.slice(-4)}`;
    await create(alice.api, third);
    await waitForPodStatus(alice.api, third, "running", 120_000);
    await write(third, "index.html", PAGE);
    await serves(third);
  });

  it("a git deploy on the full pods' btrfs, then the full state dir: failed naming the disk, the old release serving; freed, deployed", {
    timeout: 600_000,
  }, async () => {
    const name = `fulldep-${stack.prefix.slice(-4)}`;
    const git = await connected(name, "static", "acme/site", { "index.html": "<h1>still here v1</h1>" });
    const first = await deploy(name);
    expect(first.status, JSON.stringify(first)).toBe("success");
    await shows(name, "v1");

    for (const [label, filler, size] of [
      ["the pods' btrfs", path.join(podRoot, "filler"), "2000000000"],
      ["the agent's state dir", path.join(stateMount, "filler"), "100000000"],
    ] as const) {
      await git.commit("acme/site", { "index.html": `<h1>still here after ${label}</h1>` });
      try {
        await run("sh", ["-c", `head -c ${size} /dev/zero > ${filler} 2>/dev/null; sync`]).catch(
          () => undefined,
        );
        const failed = await deploy(name);
        expect(failed.status, JSON.stringify(failed)).toBe("failed");
        expect(failed.failure?.message, JSON.stringify(failed)).toMatch(/disk is full/);
        await shows(name, "v1");
      } finally {
        await rm(filler, { force: true });
        await run("sync");
      }
    }
    const done = await deploy(name);
    expect(done.status, JSON.stringify(done)).toBe("success");
    await shows(name, "after the agent's state dir");
  });

  it("a build that fills the pod's quota: failed naming the pod's disk, the old release serving, its release gone; freed, deployed", {
    timeout: 600_000,
  }, async () => {
    const name = `fullbld-${stack.prefix.slice(-4)}`;
    const app = (text: string, build?: string) => ({
      "package.json": JSON.stringify({
        name: "app",
        version: "1.0.0",
        scripts: { start: "node server.js", ...(build ? { build } : {}) },
      }),
      "server.js": `require("http").createServer((req, res) => res.end("<h1>${text}</h1>")).listen(Number(process.env.PORT), "0.0.0.0");\n`,
    });
    const git = await connected(name, "nodejs", "acme/app", app("still here v1"));
    const first = await deploy(name);
    expect(first.status, JSON.stringify(first)).toBe("success");
    await shows(name, "v1");
    const serving = await podSh(alice.api, name, "readlink ~/app");
    expect(serving).toBe(`releases/${first.id}`);

    // 32 MiB left under the pod's limit; the build writes 100 MB into its release
    const disk = new PodDisk(podRoot);
    const used = async () => {
      await podSh(alice.api, name, "sync");
      return (await disk.usage(volumeOf(name)))?.referencedBytes ?? 0;
    };
    const before = await used();
    await git.commit("acme/app", app("still here v2", "head -c 100000000 /dev/zero > big.bin"));
    await disk.setLimit(volumeOf(name), before + 32 * 1024 ** 2);
    let failedId = "";
    try {
      const failed = await deploy(name);
      failedId = failed.id;
      expect(failed.status, JSON.stringify(failed)).toBe("failed");
      expect(failed.failure?.class, JSON.stringify(failed)).toBe("build_script");
      expect(failed.failure?.message, JSON.stringify(failed)).toMatch(
        /^the pod's disk is full \(its plan's disk limit\): .*the build failed/,
      );
      // no half release switched in: ~/app is the old release, which serves
      expect(await podSh(alice.api, name, "readlink ~/app")).toBe(serving);
      await shows(name, "v1");
      // the failed build's release is gone, and with it what it counted against the quota
      expect(await podSh(alice.api, name, "ls -A ~/releases")).not.toContain(failed.id);
      await waitFor(
        "the failed release's bytes to be freed",
        async () => ((await used()) < before + 4 * 1024 ** 2 ? true : undefined),
        60_000,
      );
    } finally {
      await disk.setLimit(volumeOf(name), 5 * 1024 ** 3);
    }
    const done = await deploy(name);
    expect(done.status, JSON.stringify(done)).toBe("success");
    expect(done.id).not.toBe(failedId);
    await shows(name, "v2");
    expect(await podSh(alice.api, name, "readlink ~/app")).toBe(`releases/${done.id}`);
  });

  it("a custom domain verified while the agent's state dir is full: a 409 naming it, the pod serving; freed, the domain served", {
    timeout: 600_000,
  }, async () => {
    const domain = `www.full-${stack.prefix.slice(-4)}.test`;
    const added = await alice.api.post(`/api/pods/${pod}/domains`, { domain });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const { id, verification } = added.body as { id: string; verification: { name: string; value: string } };
    dns.setTxt(verification.name, [verification.value]);
    const servedAs = async (host: string) => {
      const page = await httpGet(stack.edgePort, host, "/index.html");
      return page.status === 200 && page.body.includes("still here");
    };
    const domainsDir = path.join(stateMount, "agent", "domains");
    const filler = path.join(stateMount, "filler");
    // one page of the tmpfs, freed later: room for the domain list but not for the vhost after it
    const slack = path.join(stateMount, "slack");
    /** a verify refused with a 409 naming the full disk; the domain still pending and not served */
    const refused = async () => {
      const res = await alice.api.post(`/api/pods/${pod}/domains/${id}/verify`);
      expect(res.status, JSON.stringify(res.body)).toBe(409);
      expect(res.body.error).toMatch(/the host agent's disk is full/);
      expect(res.body.error).not.toContain(stateMount);
      const list = await alice.api.get(`/api/pods/${pod}/domains`);
      const mine = (list.body.domains as { id: string; status: string }[]).find((d) => d.id === id);
      expect(mine?.status, JSON.stringify(list.body)).toBe("pending");
      expect(await servedAs(domain)).toBe(false);
      // the host's list does not keep it (its next render would serve it) and no temp file is left
      const left = await run("sh", [
        "-c",
        `ls -A ${domainsDir} 2>/dev/null; cat ${domainsDir}/* 2>/dev/null || true`,
      ]);
      expect(left.stdout).not.toContain(".tmp");
      expect(left.stdout).not.toContain(domain);
      // the pod's own name and vhost are as they were
      await serves(pod);
    };
    try {
      await run("sh", ["-c", `head -c 4096 /dev/zero > ${slack}`]);
      await run("sh", ["-c", `head -c 100000000 /dev/zero > ${filler} 2>/dev/null`]).catch(() => undefined);
      await refused();
      await rm(slack);
      await refused();
    } finally {
      await rm(slack, { force: true });
      await rm(filler, { force: true });
    }
    const ok = await alice.api.post(`/api/pods/${pod}/domains/${id}/verify`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.status).toBe("verified");
    await waitFor(
      "the domain to be served",
      async () => ((await servedAs(domain)) ? true : undefined),
      20_000,
    );
    await serves(pod);
  });
});
