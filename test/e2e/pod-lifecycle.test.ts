import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerExec, dockerInspect } from "./support/docker";
import { waitForHostOnline, waitForPodStatus } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

describe("pod lifecycle through the public API, Worker + agent + Docker", () => {
  let stack: Stack;
  let alice: User;
  let bob: User;
  let name: string;
  const container = () => `${stack.prefix}-${name}`;

  const waitForStatus = (who: User, pod: string, status: string) => waitForPodStatus(who.api, pod, status);

  beforeAll(async () => {
    stack = await startStack("life");
    alice = await signUp(stack.api, "Alice");
    bob = await signUp(stack.api, "Bob");
    name = `life-${stack.prefix.slice(-4)}`;
    await waitForHostOnline(alice.api);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("refuses bad input with 400/409/503 and leaves nothing behind on the host", async () => {
    const cases: [unknown, number, RegExp][] = [
      [{ name: "Bad_Name", preset: "static" }, 400, /name/],
      [{ name: "ab", preset: "static" }, 400, /name/],
      [{ name: "trailing-", preset: "static" }, 400, /name/],
      [{ name: "9starts-with-digit", preset: "static" }, 400, /name/],
      [{ name: `x${"a".repeat(40)}`, preset: "static" }, 400, /name/],
      [{ name: "ok-name", preset: "ruby" }, 400, /preset/],
      [{ name: "ok-name" }, 400, /preset/],
      [{ name: "ok-name", preset: "static", plan_slug: "mega" }, 400, /plan/],
      [{ name: "ok-name", preset: "static", region: "mars-1" }, 400, /region/],
      [{ name: "ok-name", preset: "static", server_id: "host_nope" }, 400, /server/],
      [{ name: "ok-name", preset: "static", region: "us-east" }, 503, /capacity/],
      [
        { name: "ok-name", preset: "static", customizations: { env_vars: { "BAD-KEY": "x" } } },
        400,
        /env_vars/,
      ],
      [{ name: "ok-name", preset: "static", ssh_key: "not a key" }, 400, /ssh_key/],
    ];
    for (const [body, status, error] of cases) {
      const res = await alice.api.post("/api/pods", body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.error).toMatch(error);
    }
    expect((await alice.api.get("/api/pods")).body.total).toBe(0);
    const { execFile } = await import("node:child_process");
    const leftovers = await new Promise<string>((resolve) =>
      execFile("docker", ["ps", "-aq", "--filter", `label=podhost.prefix=${stack.prefix}`], (_e, out) =>
        resolve(out),
      ),
    );
    expect(leftovers.trim()).toBe("");
  });

  it("creates a pod: 202 creating, then running, and its default page answers through nginx", async () => {
    const created = await alice.api.post("/api/pods", { name, preset: "static" });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    expect(created.body).toMatchObject({
      name,
      preset: "static",
      status: "creating",
      plan_slug: "launch",
      domain: `${name}.pods.localhost`,
      ssh_user: "pod_user",
      region: "eu-central",
      app_root: "/home/pod_user/app",
    });
    expect(created.body.ssh_port).toBeGreaterThanOrEqual(22000);

    const running = await waitForStatus(alice, name, "running");
    expect(running.ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    const page = await httpGet(stack.edgePort, `${name}.pods.localhost`);
    expect(page.status).toBe(200);
    expect(page.body).toContain("podhost");
  });

  it("refuses a name that is taken, for every team", async () => {
    for (const who of [alice, bob]) {
      const res = await who.api.post("/api/pods", { name, preset: "php" });
      expect(res.status).toBe(409);
      expect(res.body.error).toMatch(/taken/);
    }
  });

  it("keeps answering after the HostAgent object hibernates (idle > 10 s)", async () => {
    await new Promise((r) => setTimeout(r, 12_000));
    const res = await alice.api.get(`/api/pods/${name}`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("running");
  }, 30_000);

  it("runs the container unprivileged with the plan's limits on its own network", async () => {
    const info = await dockerInspect("container", container());
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.CapDrop).toContain("ALL");
    expect(info.HostConfig.SecurityOpt).toContain("no-new-privileges");
    expect(info.HostConfig.Memory).toBe(512 * 1024 * 1024);
    expect(info.HostConfig.PidsLimit).toBeGreaterThan(0);
    expect(info.Config.User).toBe("1000:1000");
    const mounts = info.Mounts as { Type: string; Source: string; Name?: string }[];
    expect(mounts.every((m) => m.Type === "volume" && m.Name?.startsWith(container()))).toBe(true);
    expect(Object.keys(info.NetworkSettings.Networks)).toEqual([container()]);
  });

  it("lists the team's pods with status counts; another team sees none of them", async () => {
    const list = await alice.api.get("/api/pods");
    expect(list.status).toBe(200);
    expect(list.body.pods.map((p: { name: string }) => p.name)).toContain(name);
    expect(list.body).toMatchObject({ total: 1, limit: 20, offset: 0, status_counts: { running: 1 } });

    const other = await bob.api.get("/api/pods");
    expect(other.body.pods).toEqual([]);
    expect((await bob.api.get(`/api/pods/${name}`)).status).toBe(404);
    expect((await bob.api.post(`/api/pods/${name}/stop`)).status).toBe(404);
    expect((await bob.api.delete(`/api/pods/${name}`)).status).toBe(404);
  });

  it("stops, starts and restarts, answering the updated pod", async () => {
    const stopped = await alice.api.post(`/api/pods/${name}/stop`);
    expect(stopped.status).toBe(200);
    expect(stopped.body.status).toBe("stopped");
    expect((await dockerInspect("container", container())).State.Running).toBe(false);

    const started = await alice.api.post(`/api/pods/${name}/start`);
    expect(started.status).toBe(200);
    expect(started.body.status).toBe("running");
    expect((await httpGet(stack.edgePort, `${name}.pods.localhost`)).status).toBe(200);

    const before = (await dockerInspect("container", container())).State.StartedAt;
    const restarted = await alice.api.post(`/api/pods/${name}/restart`);
    expect(restarted.status).toBe(200);
    expect(restarted.body.status).toBe("running");
    expect((await dockerInspect("container", container())).State.StartedAt).not.toBe(before);
  });

  it("resizes: limits change on the running container; unknown plan is 400", async () => {
    const resized = await alice.api.post(`/api/pods/${name}/resize`, { plan_slug: "grow" });
    expect(resized.status).toBe(200);
    expect(resized.body).toMatchObject({
      plan_slug: "grow",
      cpu: 2,
      memory: "2GB",
      disk: "20GB",
      status: "running",
    });
    const info = await dockerInspect("container", container());
    expect(info.HostConfig.Memory).toBe(2048 * 1024 * 1024);
    expect(info.HostConfig.NanoCpus).toBe(2e9);

    const bad = await alice.api.post(`/api/pods/${name}/resize`, { plan_slug: "mega" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/plan/);
  });

  it("clones: a new running pod with the same files", async () => {
    const cloneName = `${name}-copy`;
    await dockerExec(container(), [
      "sh",
      "-c",
      "echo cloned-marker > app/marker.txt && echo 'GREETING=\"hi there\"' > app/.env",
    ]);
    const cloned = await alice.api.post(`/api/pods/${name}/clone`, { new_name: cloneName });
    expect(cloned.status).toBe(201);
    expect(cloned.body).toMatchObject({
      name: cloneName,
      preset: "static",
      plan_slug: "grow",
      status: "creating",
    });
    await waitForStatus(alice, cloneName, "running");
    const page = await httpGet(stack.edgePort, `${cloneName}.pods.localhost`);
    expect(page.body).toContain("podhost");
    const marker = await httpGet(stack.edgePort, `${cloneName}.pods.localhost`, "/marker.txt");
    expect(marker.body.trim()).toBe("cloned-marker");
    expect(await dockerExec(`${stack.prefix}-${cloneName}`, ["cat", "app/.env"])).toContain(
      'GREETING="hi there"',
    );
    expect((await alice.api.post(`/api/pods/${name}/clone`, { new_name: cloneName })).status).toBe(409);
    expect((await alice.api.delete(`/api/pods/${cloneName}`)).status).toBe(200);
  });

  it("writes customizations (env vars, cron jobs, workers, SSH key) into a new pod", async () => {
    const custom = `${name}-node`;
    // A real key (ssh-keygen): the control plane checks keys, and a made-up blob is refused.
    const key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM93BGZpKIjsJFaZdHPPZ1dVPpsQAwNcYANtoBLvfViz e2e@test";
    const created = await alice.api.post("/api/pods", {
      name: custom,
      preset: "nodejs",
      ssh_key: key,
      description: "customized",
      customizations: {
        env_vars: { GREETING: 'multi\nline "quoted" # not a comment = fine' },
        cron_jobs: [{ schedule: "*/5 * * * *", command: "date >> /home/pod_user/logs/cron-test.log" }],
        workers: [{ name: "ticker", command: "sleep 3600" }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(202);
    await waitForStatus(alice, custom, "running");
    const c = `${stack.prefix}-${custom}`;
    const env = await dockerExec(c, ["cat", "app/.env"]);
    expect(env).toContain("GREETING=");
    expect(env).toContain('\\"quoted\\"');
    expect(
      await waitFor("the worker process", async () =>
        (await dockerExec(c, ["ps", "-eo", "args"])).includes("sleep 3600") ? true : undefined,
      ),
    ).toBe(true);
    expect(await dockerExec(c, ["cat", ".pod/crontab"])).toContain(
      "*/5 * * * * date >> /home/pod_user/logs/cron-test.log",
    );
    expect(await dockerExec(c, ["cat", ".pod/workers/ticker"])).toContain("sleep 3600");
    expect(await dockerExec(c, ["cat", ".ssh/authorized_keys"])).toContain(key);
    expect((await httpGet(stack.edgePort, `${custom}.pods.localhost`)).body).toContain("podhost");
    expect((await alice.api.delete(`/api/pods/${custom}`)).status).toBe(200);
  });

  it("records the lifecycle as events, newest first", async () => {
    const res = await alice.api.get(`/api/pods/${name}/events`);
    expect(res.status).toBe(200);
    const types = res.body.events.map((e: { type: string }) => e.type);
    for (const t of ["created", "started", "stopped", "restarted", "resized"]) expect(types).toContain(t);
    expect(types.at(-1)).toBe("created");
    expect(res.body.events[0]).not.toHaveProperty("metadata", null);
    const filtered = await alice.api.get(`/api/pods/${name}/events?type=stopped`);
    expect(filtered.body.events.every((e: { type: string }) => e.type === "stopped")).toBe(true);
  });

  it("answers 503 for the host's pods while its agent is down, and reconciles when it is back", async () => {
    await stack.agent.kill();
    const down = await alice.api.get(`/api/pods/${name}`);
    expect(down.status).toBe(503);
    expect(down.body.error).toMatch(/agent/);
    expect((await alice.api.post(`/api/pods/${name}/stop`)).status).toBe(503);

    // While the agent is away, the container stops behind its back: the reconnect must notice.
    const { execFile } = await import("node:child_process");
    await new Promise((r) => execFile("docker", ["stop", "-t", "1", container()], r));
    await stack.startAgent();
    const pod = await waitForStatus(alice, name, "stopped");
    expect(pod.status).toBe("stopped");
    expect((await alice.api.post(`/api/pods/${name}/start`)).body.status).toBe("running");
  });

  it("survives the Worker restarting: the agent reconnects and commands flow again", async () => {
    await stack.restartWorker();
    const pod = await waitFor(
      "the agent to reconnect",
      async () => {
        const res = await alice.api.get(`/api/pods/${name}`);
        return res.status === 200 ? res.body : undefined;
      },
      60_000,
    );
    expect(pod.status).toBe("running");
    expect((await alice.api.post(`/api/pods/${name}/restart`)).status).toBe(200);
  });

  it("deletes: container and volumes gone, the name reserved", async () => {
    const res = await alice.api.delete(`/api/pods/${name}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: "deleted" });
    expect(await dockerInspect("container", container())).toBeNull();
    expect(await dockerInspect("volume", `${container()}-home`)).toBeNull();
    expect(await dockerInspect("network", container())).toBeNull();
    expect((await alice.api.get(`/api/pods/${name}`)).status).toBe(404);
    expect((await alice.api.get("/api/pods")).body.status_counts).not.toHaveProperty("deleted");
    const again = await bob.api.post("/api/pods", { name, preset: "static" });
    expect(again.status).toBe(409);
    expect(again.body.error).toMatch(/reserved/);
  });
});
