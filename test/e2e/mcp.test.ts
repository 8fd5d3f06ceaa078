import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpGet } from "../support/http";
import { apiClient, signUp } from "./support/api";
import { waitForHostOnline } from "./support/pods";
import { type Stack, startStack, waitFor } from "./support/stack";

type User = Awaited<ReturnType<typeof signUp>>;

const REDIRECT = "http://127.0.0.1:33419/callback";

/** What an MCP client keeps between runs: its registration, its PKCE verifier, its tokens. */
class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = "";
  authorizationUrl?: URL;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "E2E Assistant",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

const cookiesOf = (res: Response) =>
  res.headers
    .getSetCookie()
    .map((line) => line.split(";")[0])
    .join("; ");

/**
 * The user's browser: opens the authorization URL signed in (the `pod_session` cookie), and
 * clicks Allow on the consent page. Answers the code the client's redirect URI receives.
 */
async function approveInBrowser(base: string, user: User, url: URL): Promise<string> {
  expect(url.origin).toBe(base);
  const signedIn = `pod_session=${user.token}`;
  const page = await fetch(url, { headers: { cookie: signedIn }, redirect: "manual" });
  const html = await page.text();
  expect(page.status, html).toBe(200);
  expect(html).toContain("E2E Assistant");
  const handle = /name="handle" value="([^"]+)"/.exec(html)?.[1] ?? "";
  const approved = await fetch(`${base}/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      cookie: `${signedIn}; ${cookiesOf(page)}`,
      origin: base,
    },
    body: new URLSearchParams({ intent: "consent", handle, decision: "approve" }),
  });
  expect(approved.status, await approved.text()).toBe(302);
  const location = new URL(approved.headers.get("location") ?? "");
  expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
  return location.searchParams.get("code") ?? "";
}

const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

describe("an AI assistant hosts an app through MCP (OAuth + MCP SDK client + Worker + agent + Docker)", () => {
  let stack: Stack;
  let base: string;
  let alice: User;
  let bob: User;
  const provider = new MemoryProvider();

  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    const client = new Client({ name: "e2e-assistant", version: "1.0.0" });
    await client.connect(transport);
    return { client, transport };
  };

  beforeAll(async () => {
    // OAuth's issuer is PUBLIC_URL: it must be the address the client talks to.
    stack = await startStack("mcp", { publicUrl: true });
    base = stack.api;
    alice = await signUp(base, "Alice");
    bob = await signUp(base, "Bob");
    await waitForHostOnline(alice.api);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it("registers, authorizes with PKCE, creates a pod, writes its page and reads it through the ingress", {
    timeout: 180_000,
  }, async () => {
    // 1. No token yet: the SDK follows the 401 to the metadata, registers and sends the user to consent.
    const first = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider });
    await expect(new Client({ name: "e2e-assistant", version: "1.0.0" }).connect(first)).rejects.toThrow(
      UnauthorizedError,
    );
    const authorizationUrl = provider.authorizationUrl;
    if (!authorizationUrl) throw new Error("the client was not sent to authorize");
    expect(authorizationUrl.pathname).toBe("/authorize");
    expect(authorizationUrl.searchParams.get("code_challenge_method")).toBe("S256");
    expect(provider.client?.client_id).toBeTruthy();

    // 2. The user allows it; the client exchanges the code (with its PKCE verifier) for tokens.
    const code = await approveInBrowser(base, alice, authorizationUrl);
    await first.finishAuth(code);
    expect(provider.saved?.access_token).toBeTruthy();
    expect(provider.saved?.expires_in).toBe(30 * 86_400);

    // 3. Connected: the tools are there.
    const { client } = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(
      expect.arrayContaining(["create_pod", "write_file", "run_command", "read_logs", "delete_pod"]),
    );

    // 4. A pod, end to end.
    const name = `mcp-${stack.prefix.slice(-4)}`;
    const created = (await client.callTool({
      name: "create_pod",
      arguments: { name, preset: "static" },
    })) as CallToolResult;
    expect(created.isError, text(created)).toBeFalsy();
    expect(created.structuredContent).toMatchObject({ name, status: "creating" });
    await waitFor(
      `${name} running`,
      async () => {
        const pod = (await client.callTool({ name: "get_pod", arguments: { name } })) as CallToolResult;
        return (pod.structuredContent as { status?: string } | undefined)?.status === "running"
          ? true
          : undefined;
      },
      90_000,
    );
    const marker = `hello from an assistant ${Date.now()}`;
    const written = await client.callTool({
      name: "write_file",
      arguments: { name, path: "/home/pod_user/app/index.html", content: `<h1>${marker}</h1>` },
    });
    expect(written.isError, text(written)).toBeFalsy();
    const page = await waitFor("the page through the ingress", async () => {
      const res = await httpGet(stack.edgePort, `${name}.pods.localhost`);
      return res.status === 200 && res.body.includes(marker) ? res : undefined;
    });
    expect(page.body).toContain(marker);

    const ran = (await client.callTool({
      name: "run_command",
      arguments: { name, command: ["cat", "/home/pod_user/app/index.html"] },
    })) as CallToolResult;
    expect(ran.structuredContent).toMatchObject({ exit_code: 0, stdout: expect.stringContaining(marker) });
    const events = (await client.callTool({ name: "list_events", arguments: { name } })) as CallToolResult;
    expect(JSON.stringify(events.structuredContent)).toContain("created");

    // 5. The connector cannot mint an API token; Bob's pods stay out of reach (404 through MCP).
    const connectorApi = apiClient(base, provider.saved?.access_token);
    expect((await connectorApi.post("/api/api-tokens", { name: "nope" })).status).toBe(403);
    const bobsPod = `bob-${stack.prefix.slice(-4)}`;
    expect((await bob.api.post("/api/pods", { name: bobsPod, preset: "static" })).status).toBe(202);
    const theirs = await client.callTool({ name: "get_pod", arguments: { name: bobsPod } });
    expect(theirs.isError).toBe(true);
    expect(text(theirs)).toMatch(/^404: /);
    const deleteTheirs = await client.callTool({ name: "delete_pod", arguments: { name: bobsPod } });
    expect(text(deleteTheirs)).toMatch(/^404: /);

    // 6. Alice revokes the grant: the very next MCP call is refused.
    const grants = await alice.api.get("/api/connectors");
    expect(grants.body.connectors).toEqual([expect.objectContaining({ client_name: "E2E Assistant" })]);
    expect((await alice.api.delete(`/api/connectors/${grants.body.connectors[0].id}`)).status).toBe(200);
    const refused = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${provider.saved?.access_token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    expect(refused.status).toBe(401);
    await client.close();
  });
});
