import { execFileSync } from "node:child_process";
import { readlinkSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signUp } from "./support/api";
import { waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

/**
 * The agent runs on a supported Node (docs/hosts.md, "The agent's Node"): 22 LTS or later, installed by
 * scripts/host/ensure-agent-node.sh when the machine's is older. The e2e stack's agent, started as
 * `npm start` starts it (scripts/build-agent.ts agentCommand()), is looked at from outside: the binary
 * its process runs (/proc/<pid>/exe) answers its version, and the agent is connected on it, again
 * after the Worker restarts.
 */
describe("the agent's Node", () => {
  let stack: Stack;

  beforeAll(async () => {
    stack = await startStack("anode");
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("the stack's agent runs on Node 22 or later and connects", async () => {
    const pid = stack.agent.child.pid;
    expect(pid).toBeDefined();
    const exe = readlinkSync(`/proc/${pid}/exe`);
    const version = execFileSync(exe, ["--version"], { encoding: "utf8" }).trim();
    expect(version).toMatch(/^v\d+\./);
    expect(Number(version.slice(1).split(".")[0]), `${exe} is ${version}`).toBeGreaterThanOrEqual(22);
    const user = await signUp(stack.api, "Node");
    await waitForHostOnline(user.api);
  });

  it("and reconnects on it after the Worker restarts", { timeout: 240_000 }, async () => {
    const connected = () => stack.agent.output.join("").split("connected to control plane").length - 1;
    const before = connected();
    expect(before).toBeGreaterThanOrEqual(1);
    await stack.restartWorker();
    await waitFor("the agent to reconnect", async () => (connected() > before ? true : undefined), 120_000);
  });
});
