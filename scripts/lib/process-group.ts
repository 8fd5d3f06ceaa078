/**
 * Children that go away whole. `npx wrangler dev` is npm → node (wrangler) → workerd, and a SIGTERM
 * to the first leaves the others running on the Worker's port: the next `npm start` then collides
 * with them. Each child here leads a process group of its own (`detached`), and stopping it signals
 * the whole group, then kills what is left of it after a grace period.
 */
import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from "node:child_process";
import { createServer } from "node:net";

export interface GroupChild {
  name: string;
  child: ChildProcess;
  /** resolves with the reason once the group's leader has exited */
  exited: Promise<string>;
}

export function spawnGroup(name: string, command: string, args: string[], options: SpawnOptions): GroupChild {
  const child = spawn(command, args, { ...options, detached: true });
  const exited = new Promise<string>((resolve) => {
    child.once("error", (error) => resolve(`${name} could not start: ${error.message}`));
    child.once("exit", (code, signal) =>
      resolve(signal ? `${name} was ended by ${signal}` : `${name} exited with code ${code}`),
    );
  });
  return { name, child, exited };
}

/** Whether any process of the group is still alive (signal 0 to the group). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // the group is gone already
  }
}

/** SIGTERM to every process of each group, SIGKILL to whatever is left after `graceMs`. */
export async function stopGroups(children: GroupChild[], graceMs = 5_000): Promise<void> {
  const pgids = children.map((c) => c.child.pid).filter((pid): pid is number => typeof pid === "number");
  for (const pgid of pgids) signalGroup(pgid, "SIGTERM");
  await waitGone(pgids, graceMs);
  for (const pgid of pgids.filter(groupAlive)) signalGroup(pgid, "SIGKILL");
  await waitGone(pgids, 2_000);
}

async function waitGone(pgids: number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pgids.some(groupAlive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** For a process that is exiting now (no time to wait): every group gets SIGKILL. */
export function killGroupsNow(children: GroupChild[]): void {
  for (const { child } of children) if (child.pid) signalGroup(child.pid, "SIGKILL");
}

/** Whether `host:port` can be listened on right now. */
export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Who listens on a TCP port (`workerd (pid 123)`), as `ss` tells it, or "" when it cannot tell. */
export function portHolder(port: number): string {
  const out = spawnSync("ss", ["-Hltnp", `sport = :${port}`], { encoding: "utf8" });
  const holder = out.status === 0 ? out.stdout.match(/users:\(\("([^"]*)",pid=(\d+)/) : null;
  return holder ? `${holder[1]} (pid ${holder[2]})` : "";
}
