import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { portFree, portHolder, spawnGroup, stopGroups } from "../../scripts/lib/process-group";

/** running or sleeping: a zombie waiting for a reaper that PID 1 may never be has ended all the same */
const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
};

describe("npm start's process groups (scripts/lib/process-group.ts)", () => {
  it("stopping a child ends its grandchildren too, even one that ignores SIGTERM", async () => {
    // as `npx wrangler dev` is npm → wrangler → workerd: the leader's children outlive a SIGTERM to it alone
    const group = spawnGroup("a tree", "sh", ["-c", "trap '' TERM; sleep 300 & echo $!; wait"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    const grandchild = await new Promise<number>((resolve) =>
      group.child.stdout?.once("data", (d: Buffer) => resolve(Number(d.toString().trim()))),
    );
    expect(alive(grandchild)).toBe(true);
    await stopGroups([group], 500);
    await expect(group.exited).resolves.toMatch(/ended by SIG(TERM|KILL)/);
    expect(alive(grandchild)).toBe(false);
  });

  it("tells a taken port and names who holds it", async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    expect(await portFree("127.0.0.1", port)).toBe(false);
    expect(portHolder(port)).toBe(`node (pid ${process.pid})`);
    await new Promise((resolve) => server.close(resolve));
    expect(await portFree("127.0.0.1", port)).toBe(true);
  });

  it("reports a child that exits on its own with its code", async () => {
    const group = spawnGroup("the Worker", "sh", ["-c", "exit 3"], { stdio: "ignore" });
    await expect(group.exited).resolves.toBe("the Worker exited with code 3");
  });
});
