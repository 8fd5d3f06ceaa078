import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { AGENT_ENV, AGENT_NODE_FLAGS, agentNode } from "../../scripts/build-agent";

// not ./worker.ts's: importing wrangler adds a SIGINT listener that exits before the bench cleans up
const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** set in the bench's own re-run on the agent's Node */
const MARK = "PODHOST_BENCH_ON_AGENT_NODE";

/**
 * For a bench that hosts agent code in its own process (bench/ssh.ts: the SSH gateway): run the
 * bench again on the Node the agent ships with, with its flags and environment
 * (scripts/build-agent.ts), so that what is measured is the agent's runtime, not the machine's Node
 * of the tools. Resolves true in that re-run; in the first process it waits for the re-run and exits
 * with its code.
 */
export async function onAgentNode(): Promise<true> {
  if (process.env[MARK]) return true;
  const script = process.argv[1];
  if (!script) throw new Error("no script to run again on the agent's Node");
  const child = spawn(
    agentNode(),
    [...AGENT_NODE_FLAGS, "--import", "tsx", script, ...process.argv.slice(2)],
    {
      cwd: REPO_ROOT,
      env: { ...process.env, ...AGENT_ENV, [MARK]: "1" },
      stdio: "inherit",
    },
  );
  // Ctrl-C reaches the re-run through the terminal's process group; it cleans up and exits. A
  // SIGTERM to this process alone (a timeout) is passed on as the Ctrl-C the re-run cleans up after.
  process.on("SIGINT", () => undefined);
  process.on("SIGTERM", () => child.kill("SIGINT"));
  const code = await new Promise<number>((resolve) =>
    child.once("close", (c, sig) => resolve(c ?? (sig === "SIGINT" ? 130 : 1))),
  );
  process.exit(code);
}
