import { execFile } from "node:child_process";
import type { Server } from "node:http";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { signUp } from "./support/api";
import { dockerInspect } from "./support/docker";
import { HOST_LOCAL, LAB_PORT, listenOn, type NetLab, OUTSIDE, startNetLab } from "./support/netlab";
import { createRunningPods, waitForHostOnline } from "./support/pods";
import { freePort, type Stack, startStack, waitFor } from "./support/stack";

const run = promisify(execFile);

/**
 * A tenant's pod trying to reach what it must not: cloud metadata (link-local), the host's own
 * services through the bridge gateway, private networks, another tenant's pod. Every target is a
 * listener this test sets up on this machine (support/netlab.ts): the pod's attempts never leave it.
 * The rules are the ones the agent installs at start (scripts/host/ensure-egress.sh).
 */

type User = Awaited<ReturnType<typeof signUp>>;

describe("a pod's egress", () => {
  let stack: Stack;
  let mallory: User;
  let lab: NetLab | undefined;
  let gatewayServer: Server | undefined;
  let attacker = "";
  let victim = "";
  let gateway = "";
  let gatewayPort = 0;
  let victimIp = "";

  /** `curl` from inside the attacker's pod as its own command: what it got, and how long it took. */
  const reach = async (url: string) => {
    const res = await mallory.api.post(`/api/pods/${attacker}/exec`, {
      command: ["curl", "-sS", "--connect-timeout", "2", "--max-time", "4", "-w", "\n%{time_total}", url],
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const lines = String(res.body.stdout).split("\n");
    return {
      code: res.body.exit_code as number,
      body: lines[0],
      seconds: Number(lines.at(-1)),
      stderr: res.body.stderr,
    };
  };
  const expectReached = async (address: string, port = LAB_PORT) => {
    const got = await reach(`http://${address}:${port}/`);
    expect(got.code, got.stderr).toBe(0);
    expect(got.body).toBe(`reached ${address}`);
  };
  /** refused at once (REJECT), not hanging until the tenant's timeout */
  const expectRefused = async (address: string, port = LAB_PORT) => {
    const got = await reach(`http://${address}:${port}/`);
    expect(got.code, `${address}: ${got.body} ${got.stderr}`).toBe(7); // curl: could not connect
    expect(got.seconds).toBeLessThan(1);
  };

  beforeAll(async () => {
    stack = await startStack("egress");
    mallory = await signUp(stack.api, "Mallory");
    await waitForHostOnline(mallory.api);
    const tag = stack.prefix.slice(-4);
    [attacker, victim] = [`attacker-${tag}`, `victim-${tag}`];
    await createRunningPods(mallory.api, [
      [attacker, "static"],
      [victim, "static"],
    ]);
    const network = await dockerInspect("network", `${stack.prefix}-${attacker}`);
    gateway = network?.IPAM?.Config?.[0]?.Gateway ?? "";
    expect(network?.Options?.["com.docker.network.bridge.name"]).toMatch(/^phb[0-9a-f]{12}$/);
    const container = await dockerInspect("container", `${stack.prefix}-${victim}`);
    victimIp = container?.NetworkSettings?.Networks?.[`${stack.prefix}-${victim}`]?.IPAddress ?? "";
    expect(gateway).not.toBe("");
    expect(victimIp).not.toBe("");
    lab = await startNetLab();
    // a service of the host's own, on the attacker's bridge address (as the SSH gateway would be)
    gatewayPort = await freePort();
    gatewayServer = await listenOn(gateway, gatewayPort);
  }, 180_000);

  afterAll(async () => {
    gatewayServer?.close();
    await lab?.stop();
    await stack?.stop();
  });

  it("reaches the public internet (a documentation address routed through the host)", async () => {
    await expectReached(OUTSIDE.public);
  });

  it("cannot reach link-local addresses (cloud metadata), on another machine or on the host", async () => {
    await expectRefused(OUTSIDE.linkLocal);
    await expectRefused(HOST_LOCAL.linkLocal);
  });

  it("cannot reach private ranges (RFC 1918, CGNAT) on other machines", async () => {
    await expectRefused(OUTSIDE.private10);
    await expectRefused(OUTSIDE.private192);
    await expectRefused(OUTSIDE.cgnat);
  });

  it("cannot reach the host's own services: its bridge gateway, its other addresses", async () => {
    // the host itself does reach its listener there: it is the pod that is refused
    expect((await fetch(`http://${gateway}:${gatewayPort}/`).then((r) => r.text())).trim()).toBe(
      `reached ${gateway}`,
    );
    await expectRefused(gateway, gatewayPort);
    await expectRefused(HOST_LOCAL.private10);
    await expectRefused(HOST_LOCAL.private192);
  });

  it("cannot reach another pod, which the host's ingress still reaches", async () => {
    await expectRefused(victimIp, 8080);
    const page = await httpGet(stack.edgePort, `${victim}.pods.localhost`);
    expect(page.status).toBe(200);
  });

  it("still resolves names through Docker's resolver inside the pod", async () => {
    // the pod's own container name: answered by the engine itself, nothing leaves the machine
    const res = await mallory.api.post(`/api/pods/${attacker}/exec`, {
      command: ["getent", "hosts", `${stack.prefix}-${attacker}`],
    });
    expect(res.body.exit_code, res.body.stderr).toBe(0);
    expect(res.body.stdout).toMatch(/^\d+\.\d+\.\d+\.\d+\s/);
  });

  it("gets the rules back when something removes them (the agent's check)", async () => {
    await stack.agent.stop();
    stack.agentEnv.PODHOST_EGRESS_CHECK_S = "1";
    await stack.startAgent();
    await waitForHostOnline(mallory.api);
    await run("iptables", ["-w", "-D", "INPUT", "-i", "phb+", "-j", "PODHOST-HOST"]);
    await waitFor(
      "the agent to put the INPUT jump back",
      async () => {
        const { stdout } = await run("iptables", ["-w", "-S", "INPUT"]);
        return stdout.includes("-A INPUT -i phb+ -j PODHOST-HOST") ? true : undefined;
      },
      10_000,
    );
    expect(stack.agent.output.join("")).toContain("pod egress rules went missing");
    await expectRefused(gateway, gatewayPort);
  });
});
