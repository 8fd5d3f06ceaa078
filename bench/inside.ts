/**
 * Inside-a-pod bench: the command runner and the Files endpoints through the whole stack (Worker in
 * workerd + registered host + agent process + Docker engine), each beside Docker's own way of doing
 * the same thing, measured in the same run.
 *
 *   tsx bench/inside.ts [--reps 25] [--warmup 3] [--copies 7] [--size-mb 32] [--files 1000] [--via direct|proxy]
 *                       [--parts exec,transfer,list]
 *
 * The API calls and the agent's traffic go to the Worker's own workerd; `--via proxy` sends them
 * through wrangler's dev proxy in front of it instead (see bench/support/worker.ts), a Node hop
 * that production does not have.
 *
 * 1. exec of `true`: POST /api/pods/{name}/exec {"command": ["true"]} (auth, D1, the host's Durable
 *    Object, the agent, the pod's command helper forking `timeout true` in the pod: the helper is
 *    started by the warm-up's first exec, agent/inside/exec-helper.ts) beside the in-process floors: a
 *    dockerode exec of `true` from this process and a bare `runc exec <id> true`; `docker exec <c>
 *    true` (the CLI) for context. Target (issue #17): p50 ≤ 1.1x the lower floor. For the profile,
 *    the exec route's Worker path alone (an exec of a pod the team lacks: auth, fair share, lookup, 404).
 * 2. a `--size-mb` MB file of random bytes uploaded with curl (multipart POST …/files/upload: the
 *    form read by the Worker as it arrives, the file part streamed through a TransferRelay to the
 *    agent's GET and into the pod as pod_user, then committed) and downloaded with curl (GET
 *    …/files/download: the agent's PUT streamed through the relay to the client, written to disk)
 *    beside `docker cp` into and out of the same container. Target (issue #17 item 4): p50 ≤ 1.3x each
 *    way, on a busy machine as on a quiet one. The round trip is checked byte for byte once. The CPU
 *    each variant costs is shown process by process (bench/support/cpu.ts).
 * 3. listing a directory of `--files` files: GET …/files?path=… beside `docker exec <c> ls -la <dir>`.
 *    Target: p50 ≤ 1.5x.
 *
 * Where an upload's time goes (32 MB, timed inside the Worker and the agent): ~0.25-0.3 s for the
 * file part to flow from curl through the Worker's form reader and the relay into `cat` in the pod,
 * ~25 ms after the relay's end for `cat` to finish, ~15-25 ms for the commit, ~30 ms to start;
 * through the dev proxy 0.1-0.15 s more. `docker cp` takes ~0.15-0.2 s. Its CPU, process by process,
 * is ~1.2-1.4x `docker cp`'s since curl writes straight into the pod's process
 * (docs/decisions/transfer-cpu.md).
 *
 * Variants take turns inside each repetition (in rotating order), so drift on a busy machine spreads
 * over all of them. Everything is removed at the end, also on failure or Ctrl-C.
 */
import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { createDockerClient } from "../agent/docker/client";
import { execInContainer } from "../agent/docker/exec";
import { DOCKER_RUNC_ROOT } from "../agent/docker/runc";
import { signUp } from "../test/e2e/support/api";
import { createRunningPods, waitForHostOnline } from "../test/e2e/support/pods";
import { type Stack, startStack } from "../test/e2e/support/stack";
import { fmt, formatTable, median, summarize } from "./stats";
import { positiveInt } from "./support/args";
import { CpuMeter, pidsNamed } from "./support/cpu";
import { descendants, interleaved, machineLoad, readProcess } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { exec: 1.1, transfer: 1.3, list: 1.5 };
const v = verdicts("inside");

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "25" },
    warmup: { type: "string", default: "3" },
    copies: { type: "string", default: "7" },
    "size-mb": { type: "string", default: "32" },
    files: { type: "string", default: "1000" },
    via: { type: "string", default: "direct" },
    parts: { type: "string", default: "exec,transfer,list" },
  },
});
const REPS = positiveInt("reps", args.reps);
const WARMUP = positiveInt("warmup", args.warmup);
const COPIES = positiveInt("copies", args.copies);
const SIZE_MB = positiveInt("size-mb", args["size-mb"]);
const FILES = positiveInt("files", args.files);
if (args.via !== "proxy" && args.via !== "direct") throw new Error(`--via: proxy or direct, got ${args.via}`);
const DIRECT = args.via === "direct";
const PARTS = new Set(args.parts.split(","));
for (const part of PARTS) {
  if (!["exec", "transfer", "list"].includes(part))
    throw new Error(`--parts: exec, transfer, list; got ${part}`);
}

const run = promisify(execFile);

/** the `ms` of the agent's "command done" log lines for one op */
function agentCommandMs(output: string[], op: string): number[] {
  return output
    .join("")
    .split("\n")
    .flatMap((line) => {
      if (!line.includes('"command done"')) return [];
      try {
        const j = JSON.parse(line) as { op?: string; ms?: number };
        return j.op === op && typeof j.ms === "number" ? [j.ms] : [];
      } catch {
        return [];
      }
    });
}
const docker = createDockerClient("/var/run/docker.sock");

/** One table of the samples, and the verdict of `ours` against `floor` (medians). */
function report(
  title: string,
  samples: Record<string, number[]>,
  ours: string,
  floor: string,
  target: number,
): void {
  console.log(`\n${title}\n`);
  const rows = Object.entries(samples).map(([name, xs]) => {
    const s = summarize(xs);
    return [name, fmt(s.p50, 1), fmt(s.p90, 1), fmt(s.min, 1), fmt(s.max, 1)];
  });
  console.log(formatTable(["variant", "p50 ms", "p90 ms", "min", "max"], rows));
  const a = median(samples[ours] ?? []);
  const b = median(samples[floor] ?? []);
  v.ratio({ figure: `${ours} vs ${floor}`, ours: a, floor: b, target, unit: "ms" });
}

async function main() {
  console.log(`at start: ${machineLoad()}`);
  console.log(`via: ${DIRECT ? "the Worker's own workerd (no dev proxy)" : "wrangler's dev proxy"}`);
  const stack: Stack = await startStack("inbench", { direct: DIRECT });
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-inside-bench-"));
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await stack.stop();
      await rm(dir, { recursive: true, force: true });
    })();
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    const user = await signUp(stack.api, "Bench");
    await waitForHostOnline(user.api);
    const pod = `bench-${stack.prefix.slice(-4)}`;
    await createRunningPods(user.api, [[pod, "static"]]);
    const container = `${stack.prefix}-${pod}`;
    const auth = { authorization: `Bearer ${user.token}` };
    const api = (p: string) => `${stack.api}/api/pods/${pod}${p}`;
    const must = async (what: string, res: Response) => {
      if (!res.ok) throw new Error(`${what}: ${res.status} ${await res.text()}`);
      return res;
    };

    // 1. exec of `true`
    if (PARTS.has("exec")) {
      const id = (await docker.getContainer(container).inspect()).Id;
      const execSamples = await interleaved(
        {
          "API exec true": async () => {
            const res = await must(
              "exec",
              await fetch(api("/exec"), {
                method: "POST",
                headers: { ...auth, "content-type": "application/json" },
                body: JSON.stringify({ command: ["true"] }),
              }),
            );
            const body = (await res.json()) as { exit_code: number };
            if (body.exit_code !== 0) throw new Error(`exec: exit ${body.exit_code}`);
          },
          // auth and the pod's lookup without the host (its events are D1 rows): the Worker alone
          "API GET pod events (no host)": async () => {
            await must("events", await fetch(api("/events?limit=1"), { headers: auth }));
          },
          // the exec route's own Worker path (auth, its fair-share counts, the pod's lookup) up to the
          // host: a pod name the team does not have ends it there with a 404
          "API exec, no such pod (Worker only)": async () => {
            const res = await fetch(`${stack.api}/api/pods/${pod}-none/exec`, {
              method: "POST",
              headers: { ...auth, "content-type": "application/json" },
              body: JSON.stringify({ command: ["true"] }),
            });
            if (res.status !== 404)
              throw new Error(`exec of a missing pod: ${res.status} ${await res.text()}`);
          },
          "docker exec <c> true (CLI)": () => run("docker", ["exec", container, "true"]),
          "dockerode exec true (in-process)": () => execInContainer(docker, container, ["true"]),
          "runc exec <id> true (bare)": () =>
            run("runc", ["--root", DOCKER_RUNC_ROOT, "exec", "--user", "1000:1000", id, "true"]),
        },
        REPS,
        WARMUP,
      );
      // the floor is whichever in-process way is quicker in this run
      const floor =
        median(execSamples["runc exec <id> true (bare)"] ?? []) <
        median(execSamples["dockerode exec true (in-process)"] ?? [])
          ? "runc exec <id> true (bare)"
          : "dockerode exec true (in-process)";
      report(
        `1. exec of true, ${REPS} repetitions after ${WARMUP} warm-up`,
        execSamples,
        "API exec true",
        floor,
        TARGET.exec,
      );
      const cli = median(execSamples["docker exec <c> true (CLI)"] ?? []);
      console.log(
        `API exec true / docker exec CLI (medians): ${fmt(median(execSamples["API exec true"] ?? []) / cli, 2)}x`,
      );
      // where the API's time goes: the agent's own handler time (its "command done" log lines,
      // whole ms) against the rest of the path (Worker, D1, the Durable Objects, the WebSocket)
      const handled = agentCommandMs(stack.agent.output, "pod.exec").slice(-REPS);
      if (handled.length > 0) {
        const api = median(execSamples["API exec true"] ?? []);
        const agent = median(handled);
        const bare = median(execSamples["runc exec <id> true (bare)"] ?? []);
        const worker = median(execSamples["API exec, no such pod (Worker only)"] ?? []);
        console.log(
          `profile (p50): agent handler ${fmt(agent, 1)} ms (bare runc exec ${fmt(bare, 1)} ms), the rest of the API path ${fmt(api - agent, 1)} ms, of which the exec route's Worker path up to the host (auth, fair share, the pod's lookup: a missing pod's 404) ${fmt(worker, 1)} ms and the host's object and the WebSocket ~${fmt(api - agent - worker, 1)} ms`,
        );
      }
    }

    // 2. upload and download
    if (PARTS.has("transfer")) {
      const size = SIZE_MB * 1024 * 1024;
      const data = randomBytes(size);
      const source = path.join(dir, "upload.bin");
      const fromApi = path.join(dir, "from-api.bin");
      const fromCp = path.join(dir, "from-cp.bin");
      await writeFile(source, data);
      // curl, as a user would run it (and as `docker cp` is the CLI): Node's own fetch spends ~0.3 s
      // just sending a 32 MB form. `Expect:` off: curl would wait 1 s for a 100 Continue that wrangler
      // dev's workerd never sends (Cloudflare's edge does).
      const curl = (...argv: string[]) =>
        run("curl", ["-sS", "--fail-with-body", "-H", `authorization: Bearer ${user.token}`, ...argv]);
      const apiUpload = (name: string) =>
        curl(
          "-o",
          "/dev/null",
          "-H",
          "Expect:",
          "-F",
          "path=/home/pod_user",
          "-F",
          `file=@${source};filename=${name}`,
          api("/files/upload"),
        );
      const apiDownload = (name: string) =>
        curl("-o", fromApi, `${api("/files/download")}?path=/home/pod_user/${name}`);
      await apiUpload("api.bin");
      await run("docker", ["cp", source, `${container}:/home/pod_user/cp.bin`]);
      await apiDownload("api.bin");
      const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
      if (sha(await readFile(fromApi)) !== sha(data)) throw new Error("the API round trip changed the bytes");

      const agentPid = stack.agent.child.pid ? [stack.agent.child.pid] : [];
      const cpu = new CpuMeter([
        { name: "bench+curl/CLI", pids: [process.pid] },
        {
          name: "workerd",
          pids: (await descendants()).filter((p) => p.comm === "workerd").map((p) => p.pid),
        },
        { name: "agent", pids: agentPid, part: "self" },
        { name: "runc+pod", pids: agentPid, part: "children" },
        { name: "dockerd", pids: await pidsNamed("dockerd") },
        { name: "containerd+shim", pids: await pidsNamed("containerd") },
      ]);
      const transfer = await interleaved(
        {
          "API upload": () => apiUpload("api.bin"),
          "docker cp in": () => run("docker", ["cp", source, `${container}:/home/pod_user/cp.bin`]),
          "API download": () => apiDownload("api.bin"),
          "docker cp out": () => run("docker", ["cp", `${container}:/home/pod_user/cp.bin`, fromCp]),
        },
        COPIES,
        1,
        cpu,
      );
      const mbps = (xs: number[]) => SIZE_MB / (median(xs) / 1000);
      console.log(`\n2. ${SIZE_MB} MB transfers, ${COPIES} repetitions after 1 warm-up (MB/s from the p50)`);
      for (const [name, xs] of Object.entries(transfer)) console.log(`   ${name}: ${fmt(mbps(xs), 1)} MB/s`);
      console.log(`\nwhere the CPU goes (waited-for children count towards their parent)\n\n${cpu.table()}`);
      if (agentPid[0]) {
        const mem = await readProcess(agentPid[0]);
        console.log(
          `agent RSS after the transfers: ${fmt(mem.rssKb / 1024, 1)} MB (peak ${fmt(mem.hwmKb / 1024, 1)} MB)`,
        );
      }
      const up = {
        "API upload": transfer["API upload"] ?? [],
        "docker cp in": transfer["docker cp in"] ?? [],
      };
      const down = {
        "API download": transfer["API download"] ?? [],
        "docker cp out": transfer["docker cp out"] ?? [],
      };
      report("2a. upload", up, "API upload", "docker cp in", TARGET.transfer);
      report("2b. download", down, "API download", "docker cp out", TARGET.transfer);
    }

    // 3. listing a directory of FILES files
    if (PARTS.has("list")) {
      const listDir = "/home/pod_user/app/many";
      await execInContainer(docker, container, [
        "sh",
        "-c",
        'mkdir -p "$1" && cd "$1" && i=0; while [ $i -lt "$2" ]; do : > "file-$i.txt"; i=$((i+1)); done',
        "sh",
        listDir,
        String(FILES),
      ]);
      const listing = await interleaved(
        {
          "API list": async () => {
            const res = await must(
              "list",
              await fetch(`${api("/files")}?path=${listDir}`, { headers: auth }),
            );
            const body = (await res.json()) as { files: unknown[] };
            if (body.files.length !== FILES) throw new Error(`list: ${body.files.length} entries`);
          },
          "docker exec <c> ls -la": () => run("docker", ["exec", container, "ls", "-la", listDir]),
        },
        REPS,
        WARMUP,
      );
      report(
        `3. listing ${FILES} files, ${REPS} repetitions after ${WARMUP} warm-up`,
        listing,
        "API list",
        "docker exec <c> ls -la",
        TARGET.list,
      );
    }

    console.log(`\nat end: ${machineLoad()}`);
    v.finish();
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
