/**
 * SSH gateway bench: what the gateway costs beside Docker's own way into a pod, in one run.
 *
 *   tsx bench/ssh.ts [--reps 25] [--warmup 3] [--size-mb 100] [--copies 3]
 *
 * 1. connect + `true`: `ssh -p <port> pod_user@127.0.0.1 true` with Debian's OpenSSH client and a fresh
 *    connection each time (key exchange, public-key auth with authorized_keys read from the pod, a
 *    `docker exec` of `bash -c true`, exit status), beside `docker exec <container> true` (the CLI), in
 *    rotating order inside each repetition. For context: the SSH handshake alone (`ssh-keyscan`) and a
 *    dockerode exec from inside this process. Target: ssh median ≤ 3x the docker exec median.
 * 2. a `--size-mb` MB file of random bytes uploaded into the pod's home with `scp` (SFTP, the default of
 *    OpenSSH ≥ 9) and `scp -O` (the legacy protocol: `scp -t` in the pod), beside `docker cp` of the same
 *    file to the same place, the file removed before each run (outside its timing). Throughput = size /
 *    wall time of the client command. Target (issue #17 item 4): scp and sftp ≥ 75% of docker cp (`scp`
 *    speaks SFTP to sftp-server). The scp rows use the client's default list, with which the gateway
 *    negotiates aes128-gcm@openssh.com (it offers only AES-GCM to a client that has it:
 *    agent/ssh/client-offer.ts). For context, not targets:
 *    - the same two uploads with `-c aes128-gcm@openssh.com` (the same cipher, asked for);
 *    - `docker exec -i <c> sh -c 'cat > file' < file`: the engine's exec stdin, the path every byte of
 *      an SSH session takes into the pod;
 *    - the same from this process through dockerode, the file in one write: that hop's floor on its own;
 *    - `ssh … 'cat > /dev/null'`: the SSH hop in front of the engine's exec stdin, no file written.
 *    The hops are each about as fast as `docker cp` alone; in series the client's encryption, the
 *    gateway's decryption, the engine and its shim share the machine's CPUs, which is most of the gap
 *    (and why a busy machine widens it).
 *
 * The pod is created through the agent's own handlers with the gateway in this process (as the agent
 * test does), on a unique name prefix, and everything is removed at the end, also on failure or Ctrl-C.
 * The bench runs itself again on the agent's Node with the agent's flags (./support/agent-node.ts):
 * the gateway's CPU depends on them (its garbage collector above all), so it is measured as it ships.
 */
import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execInContainer } from "../agent/docker/exec";
import { podNames } from "../agent/docker/naming";
import { type Agent, freePort, podSpec, startAgent } from "../test/agent/helpers";
import { clientOptions, makeKey, type Run, run, tempDir } from "../test/agent/ssh-support";
import { fmt, formatTable, median, summarize } from "./stats";
import { onAgentNode } from "./support/agent-node";
import { positiveInt } from "./support/args";
import { CpuMeter, pidsNamed } from "./support/cpu";
import { interleaved, machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { connectRatio: 3, copyShare: 0.75 };

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "25" },
    warmup: { type: "string", default: "3" },
    "size-mb": { type: "string", default: "100" },
    copies: { type: "string", default: "3" },
  },
});
const REPS = positiveInt("reps", args.reps);
const WARMUP = positiveInt("warmup", args.warmup);
const SIZE_MB = positiveInt("size-mb", args["size-mb"]);
const COPIES = positiveInt("copies", args.copies);

const must = (what: string, r: Run) => {
  if (r.code !== 0) throw new Error(`${what} exited with ${r.code}: ${r.stderr.trim().slice(0, 500)}`);
  return r;
};

async function main() {
  await onAgentNode();
  // made in the re-run only: the first process has no verdicts of its own to finish
  const v = verdicts("ssh");
  console.log(`at start: ${machineLoad()}`);
  console.log(
    `gateway on Node ${process.version} ${process.execArgv.filter((a) => a !== "--import" && a !== "tsx").join(" ")}`,
  );
  let agent: Agent | undefined;
  const dir = await tempDir();
  const stop = async () => {
    await agent?.cleanup();
    await rm(dir, { recursive: true, force: true });
  };
  process.once("SIGINT", () => void stop().then(() => process.exit(130)));
  try {
    agent = await startAgent({}, { ssh: true });
    const a = agent;
    const port = await freePort();
    await a.handlers["pod.create"](podSpec("sshbench", { sshPort: port }), a.ctx);
    const key = await makeKey(dir, "bench");
    await a.handlers["pod.ssh.keys.add"]({ name: "sshbench", key: key.publicKey }, a.ctx);
    const container = podNames(a.config.namePrefix, "sshbench").container;
    const ssh = clientOptions(join(dir, "known_hosts"), key);
    const target = "pod_user@127.0.0.1";

    // 1. connect + true
    const connect = await interleaved(
      {
        "ssh … true (fresh connection)": async () =>
          must("ssh", await run("ssh", [...ssh, "-p", String(port), target, "true"])),
        "docker exec <c> true (CLI)": async () =>
          must("docker exec", await run("docker", ["exec", container, "true"])),
        "ssh-keyscan (handshake only)": async () =>
          must("ssh-keyscan", await run("ssh-keyscan", ["-p", String(port), "127.0.0.1"])),
        "dockerode exec true (in-process)": () => execInContainer(a.docker, container, ["true"]),
      },
      REPS,
      WARMUP,
    );
    const rows = Object.entries(connect).map(([name, xs]) => {
      const s = summarize(xs);
      return [name, fmt(s.p50, 1), fmt(s.p90, 1), fmt(s.min, 1), fmt(s.max, 1)];
    });
    console.log(`\nconnect + true, ${REPS} repetitions after ${WARMUP} warm-up (ms)\n`);
    console.log(formatTable(["variant", "p50", "p90", "min", "max"], rows));
    v.ratio({
      figure: "ssh connect + true vs docker exec true",
      ours: median(connect["ssh … true (fresh connection)"] ?? []),
      floor: median(connect["docker exec <c> true (CLI)"] ?? []),
      target: TARGET.connectRatio,
      unit: "ms",
    });

    // 2. upload throughput
    const file = join(dir, "upload.bin");
    const data = randomBytes(SIZE_MB * 1024 * 1024);
    await writeFile(file, data);
    const clean = () => execInContainer(a.docker, container, ["rm", "-f", "/home/pod_user/upload.bin"]);
    const dest = `${target}:/home/pod_user/upload.bin`;
    const copyVariant = (argv: [string, ...string[]]) => async () => {
      must(argv[0], await run(argv[0], argv.slice(1), { timeoutMs: 300_000 }));
    };
    const gcm = ["-c", "aes128-gcm@openssh.com"];
    const cpu = new CpuMeter([
      { name: "gateway (bench)", pids: [process.pid], part: "self" },
      { name: "client+runc+pod+CLI", pids: [process.pid], part: "children" },
      { name: "dockerd", pids: await pidsNamed("dockerd") },
      { name: "containerd+shim", pids: await pidsNamed("containerd") },
    ]);
    const copies = await interleaved(
      {
        "scp (SFTP)": copyVariant(["scp", ...ssh, "-P", String(port), file, dest]),
        "scp -O (legacy scp -t)": copyVariant(["scp", ...ssh, "-O", "-P", String(port), file, dest]),
        "docker cp": copyVariant(["docker", "cp", file, `${container}:/home/pod_user/upload.bin`]),
        "scp, AES-GCM (SFTP)": copyVariant(["scp", ...ssh, ...gcm, "-P", String(port), file, dest]),
        "scp -O, AES-GCM": copyVariant(["scp", ...ssh, ...gcm, "-O", "-P", String(port), file, dest]),
        // The way every SSH byte takes into the pod: the engine's exec stdin (for context, not a target).
        "docker exec -i … cat > file": copyVariant([
          "sh",
          "-c",
          'exec docker exec -i "$1" sh -c "cat > /home/pod_user/upload.bin" < "$2"',
          "sh",
          container,
          file,
        ]),
        "dockerode exec stdin (in-process)": async () => {
          const argv = ["sh", "-c", "cat > /home/pod_user/upload.bin"];
          const r = await execInContainer(a.docker, container, argv, { stdin: data });
          if (r.exitCode !== 0)
            throw new Error(`exec stdin exited with ${r.exitCode}: ${r.stderr.slice(0, 500)}`);
        },
        "ssh … 'cat > /dev/null'": copyVariant([
          "sh",
          "-c",
          'f="$1"; shift; exec ssh "$@" "cat > /dev/null" < "$f"',
          "sh",
          file,
          ...ssh,
          "-p",
          String(port),
          target,
        ]),
      },
      COPIES,
      1,
      // the last copy removed before each run, outside its timing
      {
        before: async () => {
          await clean();
          await cpu.before();
        },
        after: (variant, measured) => cpu.after(variant, measured),
      },
    );
    const mbps = (xs: number[]) => SIZE_MB / (median(xs) / 1000);
    const floor = mbps(copies["docker cp"] ?? []);
    console.log(`\n${SIZE_MB} MB upload, ${COPIES} repetitions after 1 warm-up\n`);
    console.log(
      formatTable(
        ["variant", "p50 ms", "MB/s", "share of docker cp"],
        Object.entries(copies).map(([name, xs]) => [
          name,
          fmt(median(xs), 0),
          fmt(mbps(xs), 1),
          `${fmt((100 * mbps(xs)) / floor, 0)}%`,
        ]),
      ),
    );
    console.log(`\nwhere the CPU goes (waited-for children count towards their parent)\n\n${cpu.table()}`);
    const pct = (name: string) => `${fmt((100 * mbps(copies[name] ?? [])) / floor, 0)}%`;
    console.log(
      `\nwith -c aes128-gcm@openssh.com: ${pct("scp, AES-GCM (SFTP)")} (SFTP), ${pct("scp -O, AES-GCM")} (legacy)\n`,
    );
    for (const [name, label] of [
      ["scp (SFTP)", "scp upload (SFTP)"],
      ["scp -O (legacy scp -t)", "scp -O upload (legacy)"],
    ] as const) {
      v.atLeast({
        figure: `${label} throughput vs docker cp`,
        ours: mbps(copies[name] ?? []),
        floor,
        target: TARGET.copyShare,
        unit: "MB/s",
      });
    }
    console.log(`\nat end: ${machineLoad()}`);
    v.finish();
  } finally {
    await stop();
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
