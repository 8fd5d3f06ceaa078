import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

/** `docker inspect` of one object, or null when it does not exist. */
export async function dockerInspect(
  kind: "container" | "volume" | "network",
  name: string,
): Promise<any | null> {
  try {
    const { stdout } = await run("docker", [kind, "inspect", name]);
    return (JSON.parse(stdout) as any[])[0] ?? null;
  } catch {
    return null;
  }
}

/** Runs argv in a pod's container as pod_user from its home, as the pod's own code would. */
export async function dockerExec(container: string, argv: string[]): Promise<string> {
  const { stdout } = await run("docker", [
    "exec",
    "-u",
    "1000:1000",
    "-w",
    "/home/pod_user",
    container,
    ...argv,
  ]);
  return stdout;
}
