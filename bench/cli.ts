/**
 * The `podhost` CLI's speed (issue #27 item 5), beside floors measured in the same run:
 *
 *   tsx bench/cli.ts [--reps 20] [--warmup 3] [--deploy-reps 4] [--deploy-warmup 1] [--parts start,deploy]
 *                    [--via direct|proxy]
 *
 * 1. Start-up. `podhost --version` beside a bare `node -e 0` (target ≤ 1.3×), and `podhost pods ls
 *    --json` beside a bare `node` that makes the same request (`GET /api/pods?limit=100` with the
 *    same token, the answer printed; target ≤ 1.3×): what the CLI adds is its own start (the command
 *    table, the command's module) on top of Node's start and the request itself. Each is a new
 *    process of the built bundle (cli/dist, `npm run build:cli`), as a user's shell starts it.
 * 2. Deploy. A generated site of 300 files, 20 MB (200 text files of ~20 KB: pages, styles,
 *    scripts; 100 incompressible "images" of ~160 KB), its index.html changed before every run
 *    (outside the clock). Ours: `podhost deploy DIR --pod P --zip --json` (pack with the ignore
 *    files, upload with the ZIP re-upload API), then the pod's address polled until it serves the
 *    new index.html. Floor: the `zip` CLI (`zip -q -r`, its default deflate) of the same folder,
 *    `curl -F zip=@site.zip` to the same API call, then the same polling. Target ≤ 1.3×. Each
 *    variant deploys to its own static pod: the re-upload API allows 10 uploads per pod and 20 per
 *    team in 10 minutes (fairShareLimit "reload"), so `--deploy-reps` + `--deploy-warmup` ≤ 9.
 *
 * Variants take turns within each repetition (rotating order, bench/support/sampling.ts); medians.
 * The stack is the e2e one (test/e2e/support/stack.ts): the Worker in workerd with a fresh D1, the
 * compiled agent against the real Docker engine and the host's nginx ingress. API calls go to the
 * Worker's own workerd (`--via proxy`: through wrangler's dev proxy, as `npm start` serves them).
 * Everything made here (the stack's containers, the temporary folders) is removed at the end, also
 * on failure or Ctrl-C.
 */
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs, promisify } from "node:util";
import { buildCli } from "../scripts/build-cli";
import { signUp } from "../test/e2e/support/api";
import { createRunningPods, waitForHostOnline } from "../test/e2e/support/pods";
import { type Stack, startStack } from "../test/e2e/support/stack";
import { httpGet } from "../test/support/http";
import { fmt, formatTable, median } from "./stats";
import { positiveInt } from "./support/args";
import { interleaved, machineLoad } from "./support/sampling";
import { verdicts } from "./support/verdict";

const TARGET = { version: 1.3, podsLs: 1.3, deploy: 1.3 };
const SITE = { textFiles: 200, textBytes: 20 * 1024, images: 100, imageBytes: 160 * 1024 };

const { values: args } = parseArgs({
  options: {
    reps: { type: "string", default: "20" },
    warmup: { type: "string", default: "3" },
    "deploy-reps": { type: "string", default: "4" },
    "deploy-warmup": { type: "string", default: "1" },
    parts: { type: "string", default: "start,deploy" },
    via: { type: "string", default: "direct" },
  },
});
const REPS = positiveInt("reps", args.reps);
const WARMUP = Number(args.warmup);
const DEPLOY_REPS = positiveInt("deploy-reps", args["deploy-reps"]);
const DEPLOY_WARMUP = Number(args["deploy-warmup"]);
if (!Number.isInteger(WARMUP) || WARMUP < 0 || !Number.isInteger(DEPLOY_WARMUP) || DEPLOY_WARMUP < 0)
  throw new Error("--warmup and --deploy-warmup: expected an integer ≥ 0");
if (DEPLOY_REPS + DEPLOY_WARMUP > 9)
  throw new Error(
    "--deploy-reps + --deploy-warmup: at most 9 (the re-upload API's 10 per pod in 10 minutes)",
  );
const PARTS = new Set(args.parts.split(","));
for (const p of PARTS) if (p !== "start" && p !== "deploy") throw new Error(`--parts: unknown part ${p}`);
if (args.via !== "direct" && args.via !== "proxy") throw new Error("--via: direct or proxy");
const DIRECT = args.via === "direct";

const run = promisify(execFile);
const v = verdicts("cli");

/** Runs a process to its end; rejects with its stderr when it exits non-zero. */
function exec(cmd: string, argv: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(cmd, argv, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) =>
      code === 0
        ? resolve(out)
        : reject(new Error(`${cmd} ${argv.join(" ")}: exit ${code}: ${err.slice(-500)}`)),
    );
  });
}

/** Text that deflates as a site's pages and styles do (words from a small vocabulary). */
function pageText(bytes: number, seed: number): string {
  const words = ["pod", "deploy", "static", "page", "style", "script", "hello", "world", "data", "node"];
  const parts: string[] = [];
  let size = 0;
  let x = seed + 1;
  while (size < bytes) {
    x = (x * 1103515245 + 12345) % 2147483648;
    const w = `${words[x % words.length]}${x % 97} `;
    parts.push(w);
    size += w.length;
  }
  return parts.join("").slice(0, bytes);
}

async function writeSite(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const put = async (rel: string, data: string | Buffer) => {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), data);
    files++;
    bytes += Buffer.byteLength(data);
  };
  await put("index.html", "<h1>start</h1>\n");
  for (let i = 1; i < SITE.textFiles; i++) {
    const ext = ["html", "css", "js"][i % 3] as string;
    await put(`${ext === "html" ? "pages" : ext}/f${i}.${ext}`, pageText(SITE.textBytes, i));
  }
  for (let i = 0; i < SITE.images; i++) await put(`img/i${i}.jpg`, randomBytes(SITE.imageBytes));
  return { files, bytes };
}

async function main() {
  console.log(`at start: ${machineLoad()}`);
  const bundle = await buildCli();
  const stack: Stack = await startStack("clibench", { direct: DIRECT });
  const work = await mkdtemp(path.join(tmpdir(), "podhost-cli-bench-"));
  let cleaned: Promise<void> | undefined;
  const cleanup = () => {
    cleaned ??= (async () => {
      await stack.stop();
      await rm(work, { recursive: true, force: true });
    })();
    return cleaned;
  };
  process.once("SIGINT", () => {
    console.error("\ninterrupted: cleaning up");
    void cleanup().finally(() => process.exit(130));
  });

  try {
    console.log(`API: ${stack.api} (${DIRECT ? "the Worker's own workerd" : "wrangler's dev proxy"})`);
    const user = await signUp(stack.api, "Bench");
    await waitForHostOnline(user.api);
    const pods = { ours: `clio-${stack.prefix.slice(-4)}`, floor: `clif-${stack.prefix.slice(-4)}` };
    await createRunningPods(user.api, [
      [pods.ours, "static"],
      [pods.floor, "static"],
    ]);
    const config = path.join(work, "config");
    const cliEnv: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: work,
      XDG_CONFIG_HOME: config,
      PODHOST_API: stack.api,
      PODHOST_TOKEN: user.token,
      NO_COLOR: "1",
    };
    const podhost = (argv: string[]) => exec(process.execPath, [bundle, ...argv], { env: cliEnv });

    if (PARTS.has("start")) {
      const fetchScript = `fetch(process.env.PODHOST_API + "/api/pods?limit=100", { headers: { authorization: "Bearer " + process.env.PODHOST_TOKEN } }).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text() + "\\n"); })`;
      // what both answer must be the same list
      const [cliPods, barePods] = await Promise.all([
        podhost(["pods", "ls", "--json"]),
        exec(process.execPath, ["-e", fetchScript], { env: cliEnv }),
      ]);
      const names = (s: string) =>
        (JSON.parse(s) as { pods: { name: string }[] }).pods.map((p) => p.name).sort();
      if (names(cliPods).join() !== names(barePods).join())
        throw new Error(`pods ls and the bare request disagree: ${cliPods} vs ${barePods}`);

      const samples = await interleaved(
        {
          "node -e 0": () => exec(process.execPath, ["-e", "0"], { env: cliEnv }),
          "podhost --version": () => podhost(["--version"]),
          "node fetch GET /api/pods": () => exec(process.execPath, ["-e", fetchScript], { env: cliEnv }),
          "podhost pods ls --json": () => podhost(["pods", "ls", "--json"]),
        },
        REPS,
        WARMUP,
      );
      console.log(`\n1. start-up, ${REPS} repetitions after ${WARMUP} warm-up (ms)`);
      printSamples(samples);
      v.ratio({
        figure: "podhost --version vs node -e 0 (median)",
        ours: median(samples["podhost --version"] ?? []),
        floor: median(samples["node -e 0"] ?? []),
        target: TARGET.version,
        unit: "ms",
      });
      v.ratio({
        figure: "podhost pods ls vs a bare node fetch of GET /api/pods (median)",
        ours: median(samples["podhost pods ls --json"] ?? []),
        floor: median(samples["node fetch GET /api/pods"] ?? []),
        target: TARGET.podsLs,
        unit: "ms",
      });
    }

    if (PARTS.has("deploy")) {
      const site = path.join(work, "site");
      const made = await writeSite(site);
      const zipFile = path.join(work, "site.zip");
      console.log(
        `\nsite: ${made.files} files, ${fmt(made.bytes / 1e6, 1)} MB (${fmt(made.bytes / 2 ** 20, 1)} MiB)`,
      );
      let n = 0;
      let marker = "";
      const serves = async (pod: string, want: string, timeoutMs = 120_000) => {
        const deadline = performance.now() + timeoutMs;
        for (;;) {
          const r = await httpGet(stack.edgePort, `${pod}.pods.localhost`, "/").catch(() => undefined);
          if (r?.status === 200 && r.body.includes(want)) return;
          if (performance.now() > deadline) throw new Error(`${pod} did not serve ${want}`);
          await new Promise((res) => setTimeout(res, 20));
        }
      };
      const samples = await interleaved(
        {
          "podhost deploy": async () => {
            await podhost(["deploy", site, "--pod", pods.ours, "--zip", "--json"]);
            await serves(pods.ours, marker);
          },
          "zip + curl + poll": async () => {
            await run("zip", ["-q", "-r", zipFile, "."], { cwd: site });
            await run("curl", [
              "-sS",
              "-f",
              "-o",
              "/dev/null",
              // no `Expect: 100-continue` (curl's default over 1 MB): wrangler dev never answers it,
              // which would cost the floor a second that Cloudflare's edge does not (bench/README.md)
              "-H",
              "Expect:",
              "-H",
              `authorization: Bearer ${user.token}`,
              "-F",
              `zip=@${zipFile};type=application/zip`,
              `${stack.api}/api/pods/${pods.floor}/zip`,
            ]);
            await serves(pods.floor, marker);
          },
        },
        DEPLOY_REPS,
        DEPLOY_WARMUP,
        {
          async before() {
            n++;
            marker = `deploy-${n}-${Date.now().toString(36)}`;
            await writeFile(path.join(site, "index.html"), `<h1>${marker}</h1>\n`);
            await rm(zipFile, { force: true });
          },
          async after() {},
        },
      );
      console.log(`\n2. deploy → served, ${DEPLOY_REPS} repetitions after ${DEPLOY_WARMUP} warm-up (ms)`);
      printSamples(samples);
      v.ratio({
        figure: "podhost deploy of 300 files / 20 MB → served vs zip + curl + poll (median)",
        ours: median(samples["podhost deploy"] ?? []),
        floor: median(samples["zip + curl + poll"] ?? []),
        target: TARGET.deploy,
        unit: "ms",
      });
    }
  } finally {
    console.log(`\nat end: ${machineLoad()}`);
    await cleanup();
  }
  v.finish();
}

function printSamples(samples: Record<string, number[]>) {
  const rows = Object.entries(samples).map(([name, xs]) => {
    const sorted = [...xs].sort((a, b) => a - b);
    return [name, fmt(median(xs), 1), fmt(sorted[0] ?? Number.NaN, 1), fmt(sorted.at(-1) ?? Number.NaN, 1)];
  });
  console.log(formatTable(["variant", "median", "min", "max"], rows));
}

await main();
