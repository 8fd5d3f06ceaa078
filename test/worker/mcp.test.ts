import { env, exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { FAIR_SHARE_LIMITS, fairShareLimiter, podCap, RATE_LIMITS } from "../../worker/http/rate-limit";
import { call, freshIp, registerUser } from "./support/client";
import { BASE, connect, raw } from "./support/connectors";
import { insertPod } from "./support/db";

const open: Client[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.close()));
});

/** The official MCP client over streamable HTTP, its requests sent into the Worker. */
async function mcpClient(token: string, ip?: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/mcp`), {
    fetch: (url, init) => exports.default.fetch(new Request(url, init)),
    requestInit: { headers: { authorization: `Bearer ${token}`, ...(ip ? { "cf-connecting-ip": ip } : {}) } },
  });
  const client = new Client({ name: "podhost-test", version: "1.0.0" });
  await client.connect(transport);
  open.push(client);
  return client;
}

const text = (r: Awaited<ReturnType<Client["callTool"]>>) =>
  ((r as CallToolResult).content[0] as { text: string }).text;

describe("the MCP server", () => {
  it("answers 401 without a token, pointing at the protected resource metadata", async () => {
    const res = await raw("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
    expect(res.json).toEqual({ error: expect.any(String) });
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${BASE}/.well-known/oauth-protected-resource"`,
    );
  });

  it("is stateless: GET (a standing stream) and DELETE (a session's end) are 405", async () => {
    const u = await registerUser();
    const c = await connect(u);
    for (const method of ["GET", "DELETE"]) {
      const res = await raw("/mcp", {
        method,
        headers: { authorization: `Bearer ${c.accessToken}`, accept: "text/event-stream" },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow")).toBe("POST");
      expect(res.json).toEqual({ error: expect.stringContaining("POST") });
    }
  });

  it("lists its tools to a connector session", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [
        "add_domain",
        "connect_git",
        "create_backup",
        "create_pod",
        "delete_pod",
        "deploy_git",
        "get_env",
        "get_pod",
        "install_service",
        "list_backups",
        "list_domains",
        "list_events",
        "list_files",
        "list_pods",
        "list_services",
        "read_file",
        "read_logs",
        "restart_pod",
        "restore_backup",
        "run_command",
        "service_credentials",
        "set_env",
        "start_pod",
        "stop_pod",
        "unset_env",
        "verify_domain",
        "write_file",
      ].sort(),
    );
    const create = tools.find((t) => t.name === "create_pod");
    expect(create?.inputSchema.required).toEqual(expect.arrayContaining(["name", "preset"]));
  });

  it("lists the connector's team's pods, as GET /api/pods does", async () => {
    const u = await registerUser();
    const podId = await insertPod(u.user.active_team_id);
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const result = (await client.callTool({ name: "list_pods", arguments: {} })) as CallToolResult;
    expect(result.isError).toBeFalsy();
    const rest = await call("GET", "/api/pods", undefined, { token: u.token });
    expect(result.structuredContent).toEqual(rest.body);
    expect((result.structuredContent as { pods: { id: string }[] }).pods.map((p) => p.id)).toEqual([podId]);
  });

  it("another team's pod is 404 through MCP too, exactly as a missing one", async () => {
    const victim = await registerUser();
    const victimPod = await insertPod(victim.user.active_team_id);
    const [row] = (await call("GET", "/api/pods", undefined, { token: victim.token })).body.pods;
    expect(row.id).toBe(victimPod);
    const attacker = await registerUser();
    const c = await connect(attacker);
    const client = await mcpClient(c.accessToken);
    for (const [name, args] of [
      ["get_pod", {}],
      ["read_file", { path: "/home/pod_user/app/index.html" }],
      ["write_file", { path: "/home/pod_user/app/index.html", content: "owned" }],
      ["run_command", { command: ["id"] }],
      ["delete_pod", {}],
      ["set_env", { vars: { A: "b" } }],
      ["connect_git", { repo_url: "https://git.example.com/a/b.git" }],
      ["restore_backup", { id: "bkp_0000000000000000" }],
      ["list_services", {}],
      ["install_service", { service_type: "redis" }],
      ["service_credentials", { service_type: "redis" }],
      ["list_domains", {}],
      ["add_domain", { domain: "owned.example.com" }],
      ["verify_domain", { id: "dom_0000000000000000" }],
    ] as const) {
      const theirs = await client.callTool({ name, arguments: { name: row.name, ...args } });
      const missing = await client.callTool({ name, arguments: { name: "no-such-pod", ...args } });
      expect(theirs.isError, name).toBe(true);
      expect(text(theirs), name).toMatch(/^404: /);
      expect(text(theirs), name).toBe(text(missing).replace("no-such-pod", row.name));
    }
    // untouched: still the victim's, still there
    const after = (await call("GET", "/api/pods", undefined, { token: victim.token })).body.pods;
    expect(after).toEqual([expect.objectContaining({ id: victimPod, status: row.status })]);
  });

  it("domains and database services answer through MCP as through their REST routes", async () => {
    const u = await registerUser();
    await insertPod(u.user.active_team_id);
    const [pod] = (await call("GET", "/api/pods", undefined, { token: u.token })).body.pods;
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const domain = `mcp-${Date.now().toString(36)}.example.com`;
    const added = (await client.callTool({
      name: "add_domain",
      arguments: { name: pod.name, domain: domain.toUpperCase() },
    })) as CallToolResult;
    expect(added.isError, text(added)).toBeFalsy();
    expect(added.structuredContent).toMatchObject({ domain, status: "pending" });
    const listed = (await client.callTool({
      name: "list_domains",
      arguments: { name: pod.name },
    })) as CallToolResult;
    const rest = await call("GET", `/api/pods/${pod.name}/domains`, undefined, { token: u.token });
    expect(JSON.parse(text(listed))).toEqual(rest.body);
    const again = await client.callTool({ name: "add_domain", arguments: { name: pod.name, domain } });
    expect(text(again)).toMatch(/^409: /);
    // the Launch plan has no database services: the tool is refused as the route is
    const viaMcp = await client.callTool({
      name: "install_service",
      arguments: { name: pod.name, service_type: "postgresql" },
    });
    const viaRest = await call(
      "POST",
      `/api/pods/${pod.name}/services`,
      { service_type: "postgresql" },
      { token: u.token },
    );
    expect(viaRest.status).toBe(403);
    expect(text(viaMcp)).toBe(`403: ${viaRest.body.error}`);
  });

  it("validates tool input with the REST route's schema and names the field", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const bad = await client.callTool({
      name: "create_pod",
      arguments: { name: "Bad Name!", preset: "static" },
    });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/name/);
    const preset = await client.callTool({
      name: "create_pod",
      arguments: { name: "fine-name", preset: "cobol" },
    });
    expect(preset.isError).toBe(true);
    expect(text(preset)).toMatch(/preset/);
  });

  it("create_pod calls the same verb as POST /api/pods: no capacity in a region is its 503", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const viaMcp = await client.callTool({
      name: "create_pod",
      arguments: { name: `mcp-${Date.now().toString(36)}`, preset: "static", region: "no-such-region" },
    });
    const viaRest = await call(
      "POST",
      "/api/pods",
      { name: `rest-${Date.now().toString(36)}`, preset: "static", region: "no-such-region" },
      { token: u.token },
    );
    expect(viaMcp.isError).toBe(true);
    expect(text(viaMcp)).toBe(`${viaRest.status}: ${viaRest.body.error}`);
  });

  it("counts create_pod per account, not per IP: one user of an AI platform cannot spend the others' (attacker)", async () => {
    // Every user of a hosted assistant reaches /mcp from the platform's servers: one shared IP.
    const platformIp = freshIp();
    const [greedy, bystander] = await Promise.all([registerUser(), registerUser()]);
    const greedyClient = await mcpClient((await connect(greedy)).accessToken, platformIp);
    const create = (client: Client, i: number) =>
      client.callTool({
        name: "create_pod",
        arguments: {
          name: `spree-${i}-${Date.now().toString(36)}`,
          preset: "static",
          region: "no-such-region",
        },
      });
    const { limit } = RATE_LIMITS.createPod;
    // An unknown region: the verb's own 400, answered after the limit counted the call.
    for (let i = 0; i < limit; i++) expect(text(await create(greedyClient, i))).toMatch(/^400: region/);
    expect(text(await create(greedyClient, limit))).toMatch(/^429: .*per account/);
    // The same IP, another account: its own budget (the verb answers, not the limit).
    const bystanderClient = await mcpClient((await connect(bystander)).accessToken, platformIp);
    expect(text(await create(bystanderClient, 0))).toMatch(/^400: region/);
    // And REST from that IP keeps its per-IP budget (the spec's 50 per hour per IP), untouched.
    const rest = await call(
      "POST",
      "/api/pods",
      { name: `rest-${Date.now().toString(36)}`, preset: "static", region: "no-such-region" },
      { token: bystander.token, ip: platformIp },
    );
    expect(rest.status).toBe(400);
  }, 60_000);

  it("counts against the REST routes' fair share: a pod's spent backup allowance refuses the tool too", async () => {
    const u = await registerUser();
    const podId = await insertPod(u.user.active_team_id);
    const [pod] = (await call("GET", "/api/pods", undefined, { token: u.token })).body.pods;
    expect(pod.id).toBe(podId);
    const { perPod, windowMs } = FAIR_SHARE_LIMITS.backup;
    const limiter = fairShareLimiter(env, "backup", u.user.active_team_id);
    for (let i = 0; i < perPod; i++)
      await limiter.hitEach([{ key: podCap(pod.name), limit: perPod }], windowMs);
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    const refused = await client.callTool({ name: "create_backup", arguments: { name: pod.name } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/^429: too many backup operations: at most 10 per 60 minute\(s\) per pod/);
    const rest = await call("POST", `/api/pods/${pod.name}/backups`, {}, { token: u.token });
    expect(rest.status).toBe(429);
  });

  it("a revoked grant is 401 at /mcp at once", async () => {
    const u = await registerUser();
    const c = await connect(u);
    const client = await mcpClient(c.accessToken);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const [grant] = (await call("GET", "/api/connectors", undefined, { token: u.token })).body.connectors;
    expect((await call("DELETE", `/api/connectors/${grant.id}`, undefined, { token: u.token })).status).toBe(
      200,
    );
    const res = await raw("/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${c.accessToken}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(res.status).toBe(401);
  });
});
