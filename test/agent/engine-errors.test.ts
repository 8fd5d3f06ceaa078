import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { createDockerClient, engineReason, toAgentError } from "../../agent/docker/client";
import { hideNamePrefix, withoutHostDetails } from "../../agent/docker/engine-errors";
import { AgentError } from "../../agent/errors";
import { guard } from "../../agent/handlers/guard";
import type { Logger } from "../../agent/logger";
import { DOCKER_SOCKET } from "./helpers";

/**
 * The engine's failures as a tenant reads them: known ones in words of our own naming the part
 * that failed, anything else without the host's paths, ids or name prefix; the engine's own words
 * only in the agent's log line. The shapes below are dockerode's (docker-modem 5) for answers of
 * the engine 20.10 on this machine, read off real calls; the last cases make such calls.
 */

/** a dockerode error as docker-modem builds it from an engine's answer */
const engineError = (statusCode: number, reason: string | undefined, message: string) =>
  Object.assign(new Error(`(HTTP code ${statusCode}) ${reason ?? "unexpected"} - ${message} `), {
    statusCode,
    ...(reason ? { reason } : {}),
    json: { message },
  });

const ID = "9423fb22f80bb8d4525eb1d1abe150f6cf89181bbe2676c599e7c5dc9ebe4a1d";
const HOST_PATHS = ["/var/lib/docker", "/srv/", "/run/", "/home/", ID.slice(0, 12)];
const leaksNothing = (text: string, prefix = "podhost") => {
  for (const p of HOST_PATHS) expect(text).not.toContain(p);
  expect(text).not.toContain(`${prefix}-`);
  expect(text.trim()).not.toBe("");
};

describe("engine failures are told in words of our own", () => {
  beforeEach(() => hideNamePrefix("podhost"));

  const cases: Array<{
    name: string;
    err: Error;
    code: string;
    component: string;
    says: RegExp;
  }> = [
    {
      name: "no such container",
      err: engineError(404, "no such container", "No such container: podhost-shop"),
      code: "not_found",
      component: "pod",
      says: /^pod\.start: the pod's container is missing on its host \(engine: no such container\)$/,
    },
    {
      name: "a name already in use",
      err: engineError(
        409,
        undefined,
        `Conflict. The container name "/podhost-shop" is already in use by container "${ID}". You have to remove (or rename) that container to be able to reuse that name.`,
      ),
      code: "conflict",
      component: "engine",
      says: /name in use/,
    },
    {
      name: "a running container removed",
      err: engineError(
        409,
        undefined,
        `You cannot remove a running container ${ID}. Stop the container before attempting removal or force remove`,
      ),
      code: "conflict",
      component: "pod",
      says: /still running/,
    },
    {
      name: "exec in a stopped container",
      err: engineError(409, "container stopped/paused", `Container ${ID} is not running`),
      code: "conflict",
      component: "pod",
      says: /the pod's container is not running \(engine\)/,
    },
    {
      name: "an OCI runtime error",
      err: engineError(
        400,
        undefined,
        'failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: error mounting "/srv/podhost/disk/pods/shop-home" to rootfs at "/home/pod_user": permission denied: unknown',
      ),
      code: "internal",
      component: "engine",
      says: /the engine could not start the pod's process \(OCI runtime error\)$/,
    },
    {
      name: "a command that is not there",
      err: engineError(
        400,
        undefined,
        'failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/nonexistent-cmd": stat /nonexistent-cmd: no such file or directory: unknown',
      ),
      code: "internal",
      component: "engine",
      says: /OCI runtime error/,
    },
    {
      name: "out of memory as it starts",
      err: engineError(
        500,
        "server error",
        "failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: container init was OOM-killed (memory limit too low?): unknown",
      ),
      code: "conflict",
      component: "pod",
      says: /the pod ran out of memory \(its plan's memory limit\)/,
    },
    {
      name: "an image missing",
      err: engineError(404, "no such container", "No such image: podhost/static:latest"),
      code: "unavailable",
      component: "engine",
      says: /the pod's image is missing on its host/,
    },
    {
      name: "a port in use",
      err: engineError(
        500,
        "server error",
        `driver failed programming external connectivity on endpoint podhost-shop (${ID}): Bind for 127.0.0.1:2201 failed: port is already allocated`,
      ),
      code: "unavailable",
      component: "engine",
      says: /a port the pod needs is already in use on its host \(engine\)/,
    },
    {
      name: "the network pools exhausted",
      err: engineError(
        500,
        "server error",
        "could not find an available, non-overlapping IPv4 address pool among the defaults to assign to the network",
      ),
      code: "unavailable",
      component: "engine",
      says: /no network addresses left/,
    },
    {
      name: "a network missing",
      err: engineError(404, "no such network", "network podhost-shop not found"),
      code: "not_found",
      component: "engine",
      says: /the pod's network is missing/,
    },
  ];

  for (const c of cases)
    it(`${c.name}: ${c.code}, the ${c.component}'s, no host detail`, () => {
      const e = toAgentError(c.err, "pod.start");
      expect(e).toBeInstanceOf(AgentError);
      expect({ code: e.code, component: e.component }).toEqual({ code: c.code, component: c.component });
      expect(e.message).toMatch(c.says);
      expect(e.message.startsWith("pod.start: ")).toBe(true);
      leaksNothing(e.message);
    });

  it("an engine failure not known: its status's code, the engine's words without host details", () => {
    const e = toAgentError(
      engineError(
        500,
        "server error",
        `error while creating mount source path '/srv/podhost/disk/pods/podhost-shop-home/_data': mkdir /srv/podhost/disk: read-only file system (container ${ID})`,
      ),
      "pod.create",
    );
    expect(e.code).toBe("internal");
    expect(e.component).toBe("engine");
    expect(e.message).toBe(
      "pod.create: the engine refused (error while creating mount source path '…': mkdir …: read-only file system (container …))",
    );
  });

  it("the engine out of reach: its reason without the socket's path", () => {
    const e = toAgentError(
      Object.assign(new Error("connect ENOENT /run/docker.sock"), { code: "ENOENT", syscall: "connect" }),
      "backup.create",
    );
    expect(e).toMatchObject({ code: "unavailable", component: "engine" });
    expect(e.message).toBe("backup.create: docker engine unavailable (connect ENOENT …)");
  });

  it("a file the agent could not open is not the engine out of reach; the engine's socket refused is", () => {
    const file = toAgentError(
      Object.assign(new Error("EACCES: permission denied, open '/srv/podhost/state/domains/shop'"), {
        code: "EACCES",
        syscall: "open",
      }),
      "pod.create",
    );
    expect(file.code).toBe("internal");
    expect(file.message).toBe("pod.create: EACCES: permission denied, open '…'");
    const socket = toAgentError(
      Object.assign(new Error("connect EACCES /var/run/docker.sock"), { code: "EACCES", syscall: "connect" }),
      "pod.create",
    );
    expect(socket).toMatchObject({ code: "unavailable", component: "engine" });
    expect(socket.message).toBe("pod.create: docker engine unavailable (connect EACCES …)");
  });

  it("the host's name prefix is left out of names", () => {
    hideNamePrefix("hosta");
    expect(withoutHostDetails("endpoint hosta-shop-redis failed")).toBe("endpoint shop-redis failed");
    const e = toAgentError(engineError(500, "server error", "endpoint hosta-shop failed"), "pod.start");
    expect(e.message).toBe("pod.start: the engine refused (endpoint shop failed)");
  });

  it("an error that is no engine's (Node's own) is stripped the same way", () => {
    const e = toAgentError(
      Object.assign(
        new Error(
          "EISDIR: illegal operation on a directory, open '/srv/podhost/state/nginx/vhosts/shop.conf'",
        ),
        {
          code: "EISDIR",
          syscall: "open",
        },
      ),
      "pod.create",
    );
    expect(e.code).toBe("internal");
    expect(e.message).toBe("pod.create: EISDIR: illegal operation on a directory, open '…'");
  });

  it("attacker: a file or command named after a host path does not make the answer echo one", () => {
    const names = [
      "/var/lib/docker/volumes/victim-home/_data/secret",
      "app/../../var/lib/docker/volumes/victim-home",
      "a b /srv/podhost/disk/pods/victim-home c",
      'x"/var/lib/docker"y',
      "(/var/lib/docker)",
      "name=/var/lib/docker,",
    ];
    for (const name of names) {
      for (const status of [400, 404, 409, 500]) {
        const e = toAgentError(
          engineError(status, undefined, `open /home/pod_user/${name}: weird failure of ${name}`),
          "pod.files.write",
        );
        expect(e.message).not.toContain("/var/lib/docker");
        expect(e.message).not.toContain("/srv/");
        expect(engineReason(engineError(status, undefined, `stat ${name}: gone`))).not.toContain(
          "/var/lib/docker",
        );
      }
    }
    // bounded: a long text comes out short, without work on all of it
    const long = withoutHostDetails(`${"word ".repeat(100_000)}/var/lib/docker`);
    expect(long.length).toBeLessThanOrEqual(301);
    expect(long).not.toContain("/var/lib/docker");
  });

  it("the engine's own words go to the agent's log line, not to the answer", async () => {
    const lines: Array<{ level: string; msg: string; fields?: Record<string, unknown> }> = [];
    const log: Logger = {
      info: (msg, fields) => lines.push({ level: "info", msg, fields }),
      warn: (msg, fields) => lines.push({ level: "warn", msg, fields }),
      error: (msg, fields) => lines.push({ level: "error", msg, fields }),
      child: () => log,
    };
    const raw = `driver failed programming external connectivity on endpoint podhost-shop (${ID}): Bind for 127.0.0.1:2201 failed: port is already allocated`;
    const handler = guard("pod.start", async () => {
      throw engineError(500, "server error", raw);
    });
    const err = await handler({ name: "shop" }, { signal: new AbortController().signal, log }).then(
      () => new Error("expected a failure"),
      (e: unknown) => e as Error,
    );
    expect(err.message).not.toContain(ID);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: "op failed",
        fields: expect.objectContaining({ op: "pod.start", raw, status: 500, error: err.message }),
      }),
    ]);
  });
});

describe("on the real engine", () => {
  const docker = createDockerClient(DOCKER_SOCKET);
  const prefix = `pht${Math.random().toString(36).slice(2, 8)}`;
  const made: string[] = [];

  afterAll(async () => {
    hideNamePrefix("podhost");
    for (const name of made)
      await docker
        .getContainer(name)
        .remove({ force: true })
        .catch(() => undefined);
  });

  it("a missing container and a command named after a host path: told without the engine's words", async () => {
    hideNamePrefix(prefix);
    const missing = await docker
      .getContainer(`${prefix}-ghost`)
      .inspect()
      .then(
        () => new Error("expected a failure"),
        (e: unknown) => e,
      );
    const gone = toAgentError(missing, "pod.inspect");
    expect(gone).toMatchObject({ code: "not_found", component: "pod" });
    expect(gone.message).not.toContain(prefix);

    const images = await docker.listImages({ filters: { reference: ["podhost/static"] } });
    const image = images.flatMap((i) => i.RepoTags ?? []).find((t) => t.startsWith("podhost/static"));
    if (!image) throw new Error("the podhost/static image is not on this machine (scripts/build-images)");
    const name = `${prefix}-evil`;
    made.push(name);
    const container = await docker.createContainer({
      name,
      Image: image,
      Cmd: ["/var/lib/docker/volumes/victim-home/_data/run"],
      Labels: { "podhost.test": "engine-errors" },
    });
    const started = await container.start().then(
      () => new Error("expected a failure"),
      (e: unknown) => e,
    );
    const e = toAgentError(started, "pod.start");
    expect(e.message).toMatch(/^pod\.start: the engine could not start the pod's process/);
    leaksNothing(e.message, prefix);

    const twice = await docker.createContainer({ name, Image: image }).then(
      () => new Error("expected a failure"),
      (err: unknown) => err,
    );
    const conflict = toAgentError(twice, "pod.create");
    expect(conflict).toMatchObject({ code: "conflict", component: "engine" });
    leaksNothing(conflict.message, prefix);
  });
});
