import { access } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { diskBytes } from "../../agent/disk/pod-disk";
import { podNames } from "../../agent/docker/naming";
import { findPlan } from "../../shared/catalog";
import { testPodDisk } from "../support/pod-disk";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * A pod's home holds its plan's disk and no more (agent/disk/pod-disk.ts), on the real engine and
 * the host's real btrfs: writes past it fail in the pod with "Disk quota exceeded", a neighbour on
 * the same filesystem writes on, resize moves the limit, delete takes the subvolume away.
 */

const MiB = 1024 * 1024;
const launch = findPlan("launch");
const build = findPlan("build");
if (!launch || !build) throw new Error("the catalog lacks the launch or build plan");
const limitsOf = (p: typeof launch) => ({ cpu: p.cpu, memoryMb: p.memoryMb, diskGb: p.diskGb, pids: 128 });

let agent: Agent;
const filler = podSpec("filler", { limits: limitsOf(launch) });
const neighbour = podSpec("neighbour", { limits: limitsOf(launch) });

/** A command in the pod as pod_user (the exec op, as the API runs it). */
const sh = (pod: string, script: string) =>
  agent.handlers["pod.exec"]({ name: pod, command: ["/bin/sh", "-c", script], timeoutS: 60 }, agent.ctx);

beforeAll(async () => {
  agent = await startAgent();
  await Promise.all([
    agent.handlers["pod.create"](filler, agent.ctx),
    agent.handlers["pod.create"](neighbour, agent.ctx),
  ]);
}, 120_000);

afterAll(async () => {
  await agent?.cleanup();
});

describe("a pod's disk", () => {
  it("is seeded from the image like a plain volume (the bound subvolume starts empty)", async () => {
    const r = await sh("filler", "ls -A ~ && stat -c '%U %a' ~ && df -T ~ | tail -1");
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toContain("app");
    expect(r.stdout).toContain("pod_user 755");
    expect(r.stdout).toContain("btrfs");
  });

  it("refuses writes past the plan's disk with 'Disk quota exceeded'; the neighbour writes on", async () => {
    const limit = diskBytes(filler.limits);
    const over = await sh("filler", `fallocate -l ${limit + MiB} ~/over`);
    expect(over.exitCode).not.toBe(0);
    expect(over.stderr).toContain("Disk quota exceeded");

    // Fill to just under the limit (fallocate: instant), then a plain write past it fails too.
    const fill = await sh("filler", `fallocate -l ${limit - 32 * MiB} ~/fill`);
    expect(fill.exitCode, fill.stderr).toBe(0);
    const write = await sh("filler", "head -c 64M /dev/zero > ~/more");
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toContain("Disk quota exceeded");

    const other = await sh("neighbour", "head -c 16M /dev/zero > ~/mine && fallocate -l 1G ~/big && echo ok");
    expect(other.stdout.trim(), other.stderr).toBe("ok");
  });

  it("reports the host's limit in pod.disk, and resize moves it", async () => {
    const before = await agent.handlers["pod.disk"]({ name: "filler" }, agent.ctx);
    expect(before.limitBytes).toBe(launch.diskGb * 1024 ** 3);
    expect(before.usedBytes).toBeGreaterThan(launch.diskGb * 1024 ** 3 - 64 * MiB);

    await agent.handlers["pod.resize"]({ name: "filler", limits: limitsOf(build) }, agent.ctx);
    const after = await agent.handlers["pod.disk"]({ name: "filler" }, agent.ctx);
    expect(after.limitBytes).toBe(build.diskGb * 1024 ** 3);
    const more = await sh("filler", "fallocate -l 1G ~/more && echo ok");
    expect(more.stdout.trim(), more.stderr).toBe("ok");
  });

  it("goes with the pod: delete removes the subvolume, with any subvolume the tenant made in it", async () => {
    // A tenant can make a subvolume in its home (the ioctl needs no capability), and btrfs refuses
    // to delete a subvolume that holds one: delete must take both.
    const script = `import fcntl, os
fd = os.open(os.path.expanduser("~"), os.O_RDONLY)
fcntl.ioctl(fd, 0x5000940e, bytearray(8) + b"nested".ljust(4088, b"\\0"), True)`;
    const made = await agent.handlers["pod.exec"](
      { name: "neighbour", command: ["/usr/bin/python3", "-I", "-c", script], timeoutS: 30 },
      agent.ctx,
    );
    expect(made.exitCode, made.stderr).toBe(0);
    const dir = testPodDisk().dirOf(podNames(agent.config.namePrefix, "neighbour").volume);
    await access(`${dir}/nested`);
    await agent.handlers["pod.delete"]({ name: "neighbour" }, agent.ctx);
    await expect(access(dir)).rejects.toThrow();
  });
});
