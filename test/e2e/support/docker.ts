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
