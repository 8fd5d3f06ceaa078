import { createHash, randomBytes } from "node:crypto";
import { request } from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "../e2e/support/api";
import { dockerExec } from "../e2e/support/docker";
import { waitForHostOnline, waitForPodStatus } from "../e2e/support/pods";
import { type Stack, startStack, waitFor } from "../e2e/support/stack";
import {
  agentGoneBeforeDispatch,
  agentReaches,
  crashAgent,
  dockerObjects,
  mentioning,
  podSh,
  printOnFailure,
} from "./support";

type User = Awaited<ReturnType<typeof signUp>>;

const APP = "/home/pod_user/app";
const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

/**
 * A large file upload under faults (docs/reliability.md): 24 MiB streamed over an existing 8 MiB
 * file, with the agent away before the upload is asked, the agent SIGKILLed while the bytes stream
 * into the pod's temp file (seen in the pod), the Worker restarted then, and the agent SIGKILLed
 * once the commit is done, at its `command done` line. Each time the target is the old file intact
 * or the new one whole, never a part; no `.upload-` temp file and no staged upload is left in the
 * pod; no Docker object more; and an upload asked again afterwards lands whole.
 */
describe("chaos: file upload", () => {
  let stack: Stack;
  let alice: User;
  let pod: string;
  let oldHash: string;
  const fresh = randomBytes(24 * 1024 * 1024);
  const newHash = sha256(fresh);
  const boundary = "chaosuploadboundary";
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="path"\r\n\r\n${APP}\r\n--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.bin"\r\ncontent-type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  /** how long what a cut upload received may take to be removed, once the fault is over */
  const CLEAN_WITHIN_MS = 60_000;

  const inPod = (script: string) => dockerExec(`${stack.prefix}-${pod}`, ["sh", "-c", script]);

  beforeAll(async () => {
    stack = await startStack("chaosup");
    alice = await signUp(stack.api, "Alice");
    await waitForHostOnline(alice.api);
    pod = `chaos-up-${stack.prefix.slice(-4)}`;
    const made = await alice.api.post("/api/pods", { name: pod, preset: "static", plan_slug: "build" });
    expect(made.status, JSON.stringify(made.body)).toBe(202);
    await waitForPodStatus(alice.api, pod, "running", 180_000);
    oldHash = (
      await podSh(alice.api, pod, "cd ~/app && head -c 8388608 /dev/urandom > big.bin && sha256sum big.bin")
    ).split(" ")[0] as string;
  }, 600_000);

  afterAll(async () => {
    await stack?.stop();
  });

  afterEach((ctx) => printOnFailure(ctx, stack, mentioning(/files|command|upload/)));

  /** The target's hash, the temp files beside it and the staged uploads (as the pod sees them). */
  const state = async () => {
    const [hash = "", temps = "", staged = ""] = (
      await inPod(
        `sha256sum ${APP}/big.bin | cut -d' ' -f1; ls -A ${APP} | grep -c '^\\.upload-' || true; ls -A ~/.pod/uploads 2>/dev/null | wc -l`,
      )
    )
      .trim()
      .split("\n");
    return { hash, temps: Number(temps), staged: Number(staged) };
  };

  /**
   * The upload as a caller's client sends it, in two halves: `first` bytes of the file now, the rest
   * when `finish` is called. `answer` is the Worker's answer, or the error that cut the request.
   */
  const startUpload = (first: number) => {
    const req = request(`${stack.api}/api/pods/${pod}/files/upload`, {
      method: "POST",
      agent: false,
      headers: {
        authorization: `Bearer ${alice.token}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
        "content-length": String(head.length + fresh.length + tail.length),
      },
    });
    let answered = false;
    const answer = new Promise<{ status: number; body: string } | Error>((resolve) => {
      req.on("response", (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on("error", resolve);
      });
      req.on("error", resolve);
    }).finally(() => {
      answered = true;
    });
    const ignore = () => undefined; // a write the cut connection refused: the answer says what happened
    req.write(head, ignore);
    req.write(fresh.subarray(0, first), ignore);
    return {
      answer,
      finish: () => {
        if (req.destroyed || answered) return;
        req.write(fresh.subarray(first), ignore);
        req.end(tail, ignore);
      },
    };
  };

  /** until the bytes stream into a temp file beside the target */
  const streaming = () =>
    waitFor(
      "the upload's temp file in the pod",
      async () => ((await state()).temps > 0 ? true : undefined),
      60_000,
    );

  /** until the pod holds no temp file and no staged upload, then the target's hash */
  let last: Awaited<ReturnType<typeof state>> | undefined;
  const settled = () =>
    waitFor(
      "no temp file and no staged upload",
      async () => {
        const s = await state();
        last = s;
        return s.temps === 0 && s.staged === 0 ? s.hash : undefined;
      },
      CLEAN_WITHIN_MS,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}; the pod holds ${JSON.stringify(last)}`);
    });

  /** a whole upload afterwards lands whole */
  const landsAgain = async () => {
    const up = startUpload(0);
    up.finish();
    const answer = await up.answer;
    expect(answer, String(answer instanceof Error ? answer.message : answer.body)).toMatchObject({
      status: 200,
    });
    expect(await settled()).toBe(newHash);
    // back to the old file for the next test, through the pod itself
    await inPod(`cd ${APP} && head -c 8388608 /dev/urandom > big.bin`);
    oldHash = (await state()).hash;
  };

  it("the agent away before the upload is asked: 503 naming it, the old file intact, nothing left", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const gone = agentGoneBeforeDispatch(stack, alice.api);
    await gone.away();
    const up = startUpload(0);
    up.finish();
    const answer = await up.answer;
    expect(answer, String(answer instanceof Error ? answer.message : answer.body)).toMatchObject({
      status: 503,
    });
    expect(JSON.parse((answer as { body: string }).body).error).toMatch(/offline|not connected|agent/);
    await gone.back(0);
    await waitForHostOnline(alice.api);
    expect(await settled()).toBe(oldHash);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    await landsAgain();
  });

  it("the agent SIGKILLed while the bytes stream, started again: the old file intact, no temp file left", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const up = startUpload(6 * 1024 * 1024);
    await streaming();
    await crashAgent(stack);
    up.finish();
    const answer = await up.answer;
    if (!(answer instanceof Error)) {
      expect(answer.status, answer.body).toBeGreaterThanOrEqual(400);
      expect(answer.status, answer.body).not.toBe(500);
      expect(JSON.parse(answer.body).error).toBeTruthy();
    }
    await waitForHostOnline(alice.api);
    expect(await settled()).toBe(oldHash);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    await landsAgain();
  });

  it("the Worker restarted while the bytes stream: the old file intact, no temp file left", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const up = startUpload(6 * 1024 * 1024);
    await streaming();
    await stack.restartWorker();
    up.finish();
    await up.answer; // cut with the Worker: an error, or an answer that is not a success
    expect(await settled()).toBe(oldHash);
    await waitForHostOnline(alice.api);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
    await landsAgain();
  });

  it("the agent SIGKILLed once the commit is done, at its answer, started again: the new file whole", {
    timeout: 600_000,
  }, async () => {
    const objects = await dockerObjects(stack.prefix);
    const since = Date.now();
    const up = startUpload(0);
    up.finish();
    await agentReaches(stack.agent, "command done", { op: "pod.files.commit", pod }, 120_000, since);
    await crashAgent(stack);
    const answer = await up.answer;
    // the answer may have left before the kill (200), or been cut by it (503): the file is whole
    if (!(answer instanceof Error)) expect([200, 503], answer.body).toContain(answer.status);
    expect(await settled()).toBe(newHash);
    await waitForHostOnline(alice.api);
    expect(await dockerObjects(stack.prefix)).toEqual(objects);
  });
});
