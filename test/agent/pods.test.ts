import { access, readFile } from "node:fs/promises";
import type { ContainerInspectInfo } from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execInContainer } from "../../agent/docker/exec";
import {
  LABEL_POD,
  LABEL_PREFIX,
  LABEL_SERVICE,
  LABEL_SERVICE_POD,
  podNames,
  serviceNames,
} from "../../agent/docker/naming";
import { firstContainerAddress } from "../../agent/docker/resources";
import { renameLegacySidecars } from "../../agent/services/sidecars";
import { type Agent, httpGet, ms, podSpec, startAgent, until } from "./helpers";

/** The lifecycle of real pods on the real engine, shared across the tests of this file. */

const ENV = {
  PLAIN: "value",
  MULTI: 'line1\nline2 "quoted" # not a comment = fine',
  BACKSLASH: "C:\\path\\n-not-a-newline",
  HASH: "a#b c #d",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${X} the loader must not expand
  DOLLAR: "$HOME ${X}",
  EMPTY: "",
};

let agent: Agent;
const web = podSpec("web", {
  env: ENV,
  cronJobs: [{ schedule: "*/5 * * * *", command: "echo tick" }],
  workers: [{ name: "queue", command: "echo worker-up >> ~/worker.txt; exec sleep 1000" }],
  authorizedKeys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample test@example"],
});
let names: ReturnType<typeof podNames>;
let createMs = 0;

const x = (argv: string[], container = names.container) => execInContainer(agent.docker, container, argv);
const inspect = (container = names.container): Promise<ContainerInspectInfo> =>
  agent.docker.getContainer(container).inspect();
const page = (domain = web.domain) => httpGet(agent.port, domain);

beforeAll(async () => {
  agent = await startAgent();
  names = podNames(agent.config.namePrefix, web.name);
  const t0 = performance.now();
  const state = await agent.handlers["pod.create"](web, agent.ctx);
  createMs = ms(t0);
  expect(state).toMatchObject({ name: "web", state: "running" });
});

afterAll(async () => {
  await agent?.cleanup();
});

describe("pod.create", () => {
  it("returns a running pod with an address, listed by inventory and inspect", async () => {
    console.info(`pod.create to running: ${createMs} ms`);
    const state = await agent.handlers["pod.inspect"]({ name: "web" }, agent.ctx);
    expect(state.state).toBe("running");
    expect(state.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // the vhost was rendered during the start for the address the engine was expected to give
    // (the one after the gateway of the pod's new network): the engine did give that one
    expect(await firstContainerAddress(agent.docker, names.network)).toBe(state.ip);
    const inv = await agent.handlers["host.inventory"]({}, agent.ctx);
    expect(inv.pods).toContainEqual(state);
    expect(await agent.handlers["host.ping"]({}, agent.ctx)).toEqual({ pong: true });
  });

  it("serves the default page through the ingress for the pod's domain; unknown hosts get 404", async () => {
    const res = await until(async () => {
      const r = await page();
      return r.status === 200 ? r : null;
    });
    expect(res?.body).toContain("podhost");
    const unknown = await httpGet(agent.port, "nobody.pods.test");
    expect(unknown.status).toBe(404);
    const vhost = await readFile(agent.ingress.vhostPath("web"), "utf8");
    const { ip } = await agent.handlers["pod.inspect"]({ name: "web" }, agent.ctx);
    expect(vhost).toContain(`server_name ${web.domain};`);
    expect(vhost).toContain(`server ${ip}:8080 max_fails=0;`);
  });

  it("is idempotent: a retry adopts the running pod", async () => {
    const before = await inspect();
    const again = await agent.handlers["pod.create"](web, agent.ctx);
    expect(again.state).toBe("running");
    const after = await inspect();
    expect(after.Id).toBe(before.Id);
    expect(after.State.StartedAt).toBe(before.State.StartedAt);
  });

  it("isolates the container: no capabilities, no privileges, limits, own volume and network only", async () => {
    const info = await inspect();
    const hc = info.HostConfig;
    expect(hc.Privileged).toBe(false);
    expect(hc.CapDrop).toEqual(["ALL"]);
    expect(hc.CapAdd ?? []).toEqual([]);
    // no-new-privileges, and the engine's default seccomp profile without the btrfs ioctls
    expect(hc.SecurityOpt?.[0]).toBe("no-new-privileges");
    expect(hc.SecurityOpt).toHaveLength(2);
    const seccomp = JSON.parse(hc.SecurityOpt?.[1]?.replace(/^seccomp=/, "") ?? "{}");
    expect(seccomp.defaultAction).toBe("SCMP_ACT_ERRNO");
    const ioctl = seccomp.syscalls.filter((r: { names: string[] }) => r.names.includes("ioctl"));
    expect(ioctl.every((r: { args?: unknown[] }) => (r.args ?? []).length === 1)).toBe(true);
    expect(hc.Init).toBe(true);
    expect(hc.ReadonlyRootfs).toBe(true);
    expect(info.Config.User).toBe("1000:1000");
    expect(hc.Memory).toBe(256 * 1024 * 1024);
    expect(hc.MemorySwap).toBe(256 * 1024 * 1024);
    expect(hc.NanoCpus).toBe(0.5e9);
    expect(hc.PidsLimit).toBe(128);
    expect(hc.RestartPolicy?.Name).toBe("unless-stopped");
    expect(hc.LogConfig?.Config).toMatchObject({ "max-size": "10m" });
    expect(hc.PortBindings ?? {}).toEqual({});
    expect(hc.Binds ?? []).toEqual([]);
    // exactly one mount from the host: the pod's named volume (the rest are tmpfs)
    const mounts = info.Mounts.map((m) => ({ type: m.Type, name: m.Name, dest: m.Destination }));
    expect(mounts).toEqual([{ type: "volume", name: names.volume, dest: "/home/pod_user" }]);
    expect(JSON.stringify(info)).not.toContain("docker.sock");
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([names.network]);
    const net = await agent.docker.getNetwork(names.network).inspect();
    expect(Object.keys(net.Containers ?? {})).toEqual([info.Id]);
    // inside: uid 1000, no effective capabilities, cannot write the root filesystem
    const id = await x(["id", "-u"]);
    expect(id.stdout.trim()).toBe("1000");
    const caps = await x(["grep", "CapEff", "/proc/self/status"]);
    expect(caps.stdout).toMatch(/CapEff:\s+0+\s*$/);
    const write = await x(["touch", "/etc/x"]);
    expect(write.exitCode).not.toBe(0);
    const nnp = await x(["grep", "NoNewPrivs", "/proc/self/status"]);
    expect(nnp.stdout).toMatch(/NoNewPrivs:\s+1/);
  });

  it("writes .env, crontab, workers and authorized_keys as pod_user, and the loader reads .env back exactly", async () => {
    const stat = await x([
      "stat",
      "-c",
      "%n %U %a",
      "/home/pod_user/app/.env",
      "/home/pod_user/.pod/crontab",
      "/home/pod_user/.pod/workers/queue",
      "/home/pod_user/.ssh",
      "/home/pod_user/.ssh/authorized_keys",
    ]);
    expect(stat.stdout.trim().split("\n")).toEqual([
      "/home/pod_user/app/.env pod_user 600",
      "/home/pod_user/.pod/crontab pod_user 644",
      "/home/pod_user/.pod/workers/queue pod_user 644",
      "/home/pod_user/.ssh pod_user 700",
      "/home/pod_user/.ssh/authorized_keys pod_user 600",
    ]);
    const dump = await x([
      "/opt/podhost/bin/pod-env-exec",
      "/home/pod_user/app/.env",
      "python3",
      "-c",
      `import json, os; print(json.dumps({k: os.environ.get(k) for k in ${JSON.stringify(Object.keys(ENV))}}))`,
    ]);
    expect(dump.exitCode).toBe(0);
    expect(JSON.parse(dump.stdout)).toEqual(ENV);
    const crontab = await x(["cat", "/home/pod_user/.pod/crontab"]);
    expect(crontab.stdout).toContain("\n*/5 * * * * echo tick\n");
    const keys = await x(["cat", "/home/pod_user/.ssh/authorized_keys"]);
    expect(keys.stdout).toBe(`${web.authorizedKeys[0]}\n`);
    // the default app was still seeded next to our .env, and the worker runs under runit
    expect((await x(["test", "-f", "/home/pod_user/app/index.html"])).exitCode).toBe(0);
    const worker = await until(async () =>
      (await x(["cat", "/home/pod_user/worker.txt"])).stdout.includes("worker-up"),
    );
    expect(worker).toBe(true);
  });
});

describe("stop, start, restart, resize", () => {
  it("stops fast, starts again with the vhost pointing at the (possibly new) address", async () => {
    const t0 = performance.now();
    const stopped = await agent.handlers["pod.stop"]({ name: "web" }, agent.ctx);
    const stopMs = ms(t0);
    expect(stopped).toEqual({ name: "web", state: "stopped", ip: null });
    expect(stopMs).toBeLessThan(1500);
    // stopped through the API: the restart policy leaves it down
    await new Promise((r) => setTimeout(r, 500));
    expect((await inspect()).State.Running).toBe(false);
    expect((await agent.handlers["pod.stop"]({ name: "web" }, agent.ctx)).state).toBe("stopped");

    const t1 = performance.now();
    const started = await agent.handlers["pod.start"]({ name: "web" }, agent.ctx);
    const startMs = ms(t1);
    console.info(`pod.stop: ${stopMs} ms, pod.start: ${startMs} ms`);
    expect(started.state).toBe("running");
    const vhost = await readFile(agent.ingress.vhostPath("web"), "utf8");
    expect(vhost).toContain(`server ${started.ip}:8080 max_fails=0;`);
    expect((await until(async () => (await page()).status === 200)) as boolean).toBe(true);
    // a second start is a no-op
    expect((await agent.handlers["pod.start"]({ name: "web" }, agent.ctx)).ip).toBe(started.ip);
  });

  it("restarts: a new container process, files kept, page back", async () => {
    await x(["sh", "-c", "echo kept > /home/pod_user/app/kept.txt"]);
    const before = (await inspect()).State.StartedAt;
    const t0 = performance.now();
    const state = await agent.handlers["pod.restart"]({ name: "web" }, agent.ctx);
    console.info(`pod.restart: ${ms(t0)} ms`);
    expect(state.state).toBe("running");
    expect((await inspect()).State.StartedAt).not.toBe(before);
    expect((await x(["cat", "/home/pod_user/app/kept.txt"])).stdout).toBe("kept\n");
    const res = await until(async () => {
      const r = await httpGet(agent.port, web.domain, "/kept.txt");
      return r.status === 200 ? r : null;
    });
    expect(res?.body).toBe("kept\n");
  });

  it("resizes the running container in place", async () => {
    const before = await inspect();
    const limits = { cpu: 1.5, memoryMb: 512, diskGb: 10, pids: 300 };
    const state = await agent.handlers["pod.resize"]({ name: "web", limits }, agent.ctx);
    expect(state.state).toBe("running");
    const after = await inspect();
    expect(after.HostConfig).toMatchObject({
      Memory: 512 * 1024 * 1024,
      MemorySwap: 512 * 1024 * 1024,
      NanoCpus: 1.5e9,
      PidsLimit: 300,
    });
    expect(after.State.StartedAt).toBe(before.State.StartedAt);
    // and down again
    await agent.handlers["pod.resize"](
      { name: "web", limits: { ...limits, cpu: 0.25, memoryMb: 128 } },
      agent.ctx,
    );
    expect((await inspect()).HostConfig).toMatchObject({ Memory: 128 * 1024 * 1024, NanoCpus: 0.25e9 });
  });
});

describe("pod.clone", () => {
  it("copies the source's home (files and .env) into a new running pod, source running", async () => {
    await x([
      "sh",
      "-c",
      "echo from-source > /home/pod_user/app/clone-me.txt && rm /home/pod_user/app/index.html",
    ]);
    const copy = podSpec("web-copy", { authorizedKeys: ["ssh-ed25519 AAAAnother copy@example"] });
    const t0 = performance.now();
    const state = await agent.handlers["pod.clone"]({ source: "web", spec: copy }, agent.ctx);
    console.info(`pod.clone (running source): ${ms(t0)} ms`);
    expect(state.state).toBe("running");
    const c = podNames(agent.config.namePrefix, "web-copy").container;
    expect((await x(["cat", "/home/pod_user/app/clone-me.txt"], c)).stdout).toBe("from-source\n");
    // an exact copy: a file deleted in the source does not come back from the image's defaults
    expect((await x(["test", "-e", "/home/pod_user/app/index.html"], c)).exitCode).not.toBe(0);
    expect((await x(["cat", "/home/pod_user/app/.env"], c)).stdout).toContain('PLAIN="value"');
    expect((await x(["stat", "-c", "%U %a", "/home/pod_user", "/home/pod_user/.ssh"], c)).stdout).toBe(
      "pod_user 755\npod_user 700\n",
    );
    expect((await x(["cat", "/home/pod_user/.ssh/authorized_keys"], c)).stdout).toBe(
      `${copy.authorizedKeys[0]}\n`,
    );
    const res = await until(async () => {
      const r = await httpGet(agent.port, copy.domain, "/clone-me.txt");
      return r.status === 200 ? r : null;
    });
    expect(res?.body).toBe("from-source\n");
  });

  it("clones a stopped source, which stays stopped", async () => {
    await agent.handlers["pod.stop"]({ name: "web" }, agent.ctx);
    const copy = podSpec("web-copy2");
    const state = await agent.handlers["pod.clone"]({ source: "web", spec: copy }, agent.ctx);
    expect(state.state).toBe("running");
    const c = podNames(agent.config.namePrefix, "web-copy2").container;
    expect((await x(["cat", "/home/pod_user/app/clone-me.txt"], c)).stdout).toBe("from-source\n");
    expect((await agent.handlers["pod.inspect"]({ name: "web" }, agent.ctx)).state).toBe("stopped");
    await agent.handlers["pod.start"]({ name: "web" }, agent.ctx);
  });
});

describe("pod.delete", () => {
  it("removes container, volume, network and vhost; a second delete succeeds", async () => {
    const n = podNames(agent.config.namePrefix, "web-copy2");
    expect(await agent.handlers["pod.delete"]({ name: "web-copy2" }, agent.ctx)).toEqual({ deleted: true });
    const gone = (p: Promise<unknown>) =>
      p.then(
        () => false,
        (e: { statusCode?: number }) => e.statusCode === 404,
      );
    expect(await gone(agent.docker.getContainer(n.container).inspect())).toBe(true);
    expect(await gone(agent.docker.getVolume(n.volume).inspect())).toBe(true);
    expect(await gone(agent.docker.getNetwork(n.network).inspect())).toBe(true);
    await expect(access(agent.ingress.vhostPath("web-copy2"))).rejects.toThrow();
    expect((await httpGet(agent.port, "web-copy2.pods.test")).status).toBe(404);
    expect(await agent.handlers["pod.delete"]({ name: "web-copy2" }, agent.ctx)).toEqual({ deleted: true });
    expect(await agent.handlers["pod.inspect"]({ name: "web-copy2" }, agent.ctx)).toEqual({
      name: "web-copy2",
      state: "missing",
      ip: null,
    });
  });
});

describe("helper names (attacker: a stranger's pod named like another pod's helpers)", () => {
  it("survives that pod's clone, deploy clean-up and delete: helpers are `<pod>_<role>`, never a pod's name", async () => {
    const victims = ["mine-build", "mine-candidate", "mine-clone", "mine-svc-redis"];
    await Promise.all(victims.map((v) => agent.handlers["pod.create"](podSpec(v), agent.ctx)));
    await agent.handlers["pod.clone"]({ source: "web", spec: podSpec("mine") }, agent.ctx);
    expect(await agent.handlers["pod.delete"]({ name: "mine" }, agent.ctx)).toEqual({ deleted: true });
    for (const v of victims) {
      expect((await agent.handlers["pod.inspect"]({ name: v }, agent.ctx)).state, v).toBe("running");
    }
    await Promise.all(victims.map((v) => agent.handlers["pod.delete"]({ name: v }, agent.ctx)));
  });

  it("renames a sidecar made under the old `-svc-` name at the agent's start, and nothing else", async () => {
    const prefix = agent.config.namePrefix;
    const make = (name: string, labels: Record<string, string>) =>
      agent.docker.createContainer({
        name,
        Image: agent.config.images.static,
        Cmd: ["true"],
        Labels: labels,
      });
    const legacy = await make(`${prefix}-old-svc-redis`, {
      [LABEL_PREFIX]: prefix,
      [LABEL_SERVICE]: "redis",
      [LABEL_SERVICE_POD]: "old",
    });
    // a pod container of a pod named `other-svc-redis`: no sidecar labels, never renamed
    const pod = await make(`${prefix}-other-svc-redis`, {
      [LABEL_PREFIX]: prefix,
      [LABEL_POD]: "other-svc-redis",
    });
    try {
      await renameLegacySidecars(agent.docker, prefix, agent.ctx.log);
      expect((await legacy.inspect()).Name).toBe(`/${serviceNames(prefix, "old", "redis").container}`);
      expect((await pod.inspect()).Name).toBe(`/${prefix}-other-svc-redis`);
    } finally {
      await legacy.remove({ force: true });
      await pod.remove({ force: true });
    }
  });
});
