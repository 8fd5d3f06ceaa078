import { access, chown } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { btrfs } from "../../agent/disk/btrfs";
import { diskBytes } from "../../agent/disk/pod-disk";
import { podNames } from "../../agent/docker/naming";
import { findPlan } from "../../shared/catalog";
import { SUBVOLUME_IOCTLS, testPodDisk } from "../support/pod-disk";
import { type Agent, podSpec, startAgent } from "./helpers";

/**
 * A pod's home holds its plan's disk and no more (agent/disk/pod-disk.ts), on the real engine and
 * the host's real btrfs: writes past it fail in the pod with "Disk quota exceeded", a neighbour on
 * the same filesystem writes on, the pod cannot make btrfs subvolumes (seccomp), one nested in its
 * home anyway counts against the same limit, resize moves the limit, delete takes the subvolumes and their qgroup away.
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
const python = (pod: string, script: string) =>
  agent.handlers["pod.exec"](
    { name: pod, command: ["/usr/bin/python3", "-I", "-c", script], timeoutS: 30 },
    agent.ctx,
  );

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

  it("refuses every btrfs subvolume ioctl in the pod (seccomp), the _V2 ones that could skip the qgroup too", async () => {
    const tried = await python("neighbour", SUBVOLUME_IOCTLS);
    expect(tried.exitCode, tried.stderr).toBe(0);
    expect(tried.stdout.trim().split("\n")).toEqual([
      "create EPERM",
      "create_v2 EPERM",
      "snapshot EPERM",
      "snapshot_v2 EPERM",
    ]);
    expect((await sh("neighbour", "ls -A ~")).stdout).not.toMatch(/nested|escape|snap/);
  });

  it("counts a subvolume and a snapshot nested in the home against the same limit (made from the host: the second line of defence)", async () => {
    const disk = testPodDisk();
    const home = disk.dirOf(podNames(agent.config.namePrefix, "neighbour").volume);
    await btrfs(["subvolume", "create", `${home}/nested`]);
    await btrfs(["subvolume", "snapshot", `${home}/nested`, `${home}/snap`]);
    await chown(`${home}/nested`, 1000, 1000);
    await chown(`${home}/snap`, 1000, 1000);
    const volume = podNames(agent.config.namePrefix, "neighbour").volume;
    const group = await disk.usage(volume);
    expect(group?.children).toHaveLength(3); // the home, nested and snap
    const limit = diskBytes(neighbour.limits);
    expect(group?.maxReferencedBytes).toBe(limit);

    // Alone, more than the whole limit in the nested subvolume.
    const over = await sh("neighbour", `fallocate -l ${limit + MiB} ~/nested/over`);
    expect(over.exitCode).not.toBe(0);
    expect(over.stderr).toContain("Disk quota exceeded");
    // The nested subvolume fills what the home left, then the snapshot cannot take more.
    const used = (await disk.usage(volume))?.referencedBytes ?? 0;
    const fill = await sh("neighbour", `fallocate -l ${limit - used - 32 * MiB} ~/nested/fill`);
    expect(fill.exitCode, fill.stderr).toBe(0);
    const write = await sh("neighbour", "head -c 64M /dev/zero > ~/snap/more");
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toContain("Disk quota exceeded");
    const full = await agent.handlers["pod.disk"]({ name: "neighbour" }, agent.ctx);
    expect(full.limitBytes).toBe(limit);
  });

  it("goes with the pod: delete removes the subvolume, the ones the tenant made in it, and its qgroup", async () => {
    // btrfs refuses to delete a subvolume that holds others, and a qgroup that has members.
    const disk = testPodDisk();
    const volume = podNames(agent.config.namePrefix, "neighbour").volume;
    const dir = disk.dirOf(volume);
    await access(`${dir}/nested`);
    await access(`${dir}/snap`);
    const id = (await btrfs(["inspect-internal", "rootid", dir])).trim();
    await agent.handlers["pod.delete"]({ name: "neighbour" }, agent.ctx);
    await expect(access(dir)).rejects.toThrow();
    expect(await btrfs(["qgroup", "show", "--raw", disk.root])).not.toMatch(new RegExp(`^1/${id}\\s`, "m"));
  });
});
