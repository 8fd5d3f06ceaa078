import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migratedPersistDir } from "../../bench/support/worker";
import { open, seal, sealedWith } from "../../worker/lib/sealing";
import { execLocalD1, queryLocalD1 } from "../support/local-d1";

/**
 * `npm run secrets:rotate` (docs/security.md "Rotating the keys at rest"), run as the operator runs
 * it (through wrangler) against a local D1 migrated from the migrations (a copy of
 * bench/support/worker.ts's template) and a .dev.vars of its own: every sealed value comes out
 * under the new key with its purpose and owner as associated data, values sealed before associated
 * data (v1) included. The test's own seed rows and look-ups skip wrangler (test/support/local-d1.ts).
 */

const run = promisify(execFile);
let dir = "";
const devVars = () => join(dir, ".dev.vars");
const newKey = () => randomBytes(32).toString("base64");

async function rotate(...args: string[]) {
  return run(
    "npm",
    ["run", "--silent", "secrets:rotate", "--", ...args, "--persist-to", dir, "--dev-vars", devVars()],
    { env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
  ).then(
    (r) => ({ code: 0, out: r.stdout + r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
  );
}

/** A value as the Worker sealed it before associated data: `v1.<iv>.<ciphertext>`. */
async function sealV1(keyBase64: string, plaintext: string) {
  const key = await crypto.subtle.importKey("raw", Buffer.from(keyBase64, "base64"), "AES-GCM", false, [
    "encrypt",
  ]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv },
    key,
    new TextEncoder().encode(plaintext),
  );
  return `v1.${Buffer.from(iv).toString("base64")}.${Buffer.from(sealed).toString("base64")}`;
}

const readVar = (text: string, name: string) => new RegExp(`^${name}="([^"]*)"$`, "m").exec(text)?.[1];

const now = new Date().toISOString();
const gitConfig = (podId: string, token: string, webhookSecret: string) =>
  `INSERT INTO git_configs (pod_id, repo_url, repo_key, branch, auto_deploy, token_encrypted, webhook_secret_encrypted, created_at, updated_at)
   VALUES ('${podId}', 'https://github.com/acme/site.git', 'github.com/acme/site', 'main', 1, '${token}', '${webhookSecret}', '${now}', '${now}')`;
const service = (id: string, podId: string, password: string) =>
  `INSERT INTO pod_services (id, pod_id, service_type, status, port, password_encrypted, created_at, updated_at)
   VALUES ('${id}', '${podId}', 'postgresql', 'running', 5432, '${password}', '${now}', '${now}')`;

/** Every sealed value, by `<table>/<row>/<column>`. */
async function sealedValues(): Promise<Record<string, string>> {
  const rows = await queryLocalD1<{ k: string; v: string }>(
    dir,
    `SELECT 'git/' || pod_id || '/token' AS k, token_encrypted AS v FROM git_configs
     UNION ALL SELECT 'git/' || pod_id || '/webhook', webhook_secret_encrypted FROM git_configs
     UNION ALL SELECT 'svc/' || id || '/password', password_encrypted FROM pod_services`,
  );
  return Object.fromEntries(rows.map((r) => [r.k, r.v]));
}

beforeAll(async () => {
  dir = await migratedPersistDir();
}, 240_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("npm run secrets:rotate", () => {
  it("re-seals every value with a new key and its purpose and owner, v1 values included, and keeps the rest of .dev.vars", async () => {
    const gitKey = newKey();
    const serviceKey = newKey();
    await writeFile(
      devVars(),
      `OTHER_SETTING="kept"\nGIT_TOKEN_KEY="${gitKey}"\nSERVICE_PASSWORD_KEY="${serviceKey}"\n`,
    );
    // one row sealed before associated data, one after
    await execLocalD1(dir, [
      gitConfig("pod_rot_a", await sealV1(gitKey, "ghp_token_a"), await sealV1(gitKey, "whs_secret_a")),
      gitConfig(
        "pod_rot_b",
        await seal({ current: gitKey }, "git-token", "pod_rot_b", "ghp_token_b"),
        await seal({ current: gitKey }, "git-webhook-secret", "pod_rot_b", "whs_secret_b"),
      ),
      service("svc_rot_a", "pod_rot_a", await sealV1(serviceKey, "service-password-a")),
    ]);

    const rotated = await rotate();
    expect(rotated.code, rotated.out).toBe(0);
    expect(rotated.out).toContain("GIT_TOKEN_KEY: 4 values re-sealed");
    expect(rotated.out).toContain("SERVICE_PASSWORD_KEY: 1 value re-sealed");

    const vars = await readFile(devVars(), "utf8");
    const gitNew = readVar(vars, "GIT_TOKEN_KEY") ?? "";
    const serviceNew = readVar(vars, "SERVICE_PASSWORD_KEY") ?? "";
    expect(gitNew).not.toBe(gitKey);
    expect(Buffer.from(gitNew, "base64")).toHaveLength(32);
    expect(serviceNew).not.toBe(serviceKey);
    expect(vars).toContain('OTHER_SETTING="kept"');
    expect(vars).not.toContain("_PREVIOUS");

    // Only the new key opens them, and only as what and whose they are.
    const values = await sealedValues();
    const a = {
      token_encrypted: values["git/pod_rot_a/token"],
      webhook_secret_encrypted: values["git/pod_rot_a/webhook"],
    };
    const b = { token_encrypted: values["git/pod_rot_b/token"] };
    for (const sealed of [
      a.token_encrypted,
      a.webhook_secret_encrypted,
      b.token_encrypted,
      values["git/pod_rot_b/webhook"],
    ])
      expect(await sealedWith(gitNew, sealed ?? "")).toBe(true);
    const ring = { current: gitNew };
    expect(await open(ring, "git-token", "pod_rot_a", a.token_encrypted ?? "")).toEqual({
      ok: true,
      value: "ghp_token_a",
    });
    expect(await open(ring, "git-webhook-secret", "pod_rot_a", a.webhook_secret_encrypted ?? "")).toEqual({
      ok: true,
      value: "whs_secret_a",
    });
    expect(await open(ring, "git-token", "pod_rot_b", b.token_encrypted ?? "")).toEqual({
      ok: true,
      value: "ghp_token_b",
    });
    expect(await open(ring, "git-token", "pod_rot_b", a.token_encrypted ?? "")).toEqual({
      ok: false,
      reason: "decrypt",
    });
    expect(await open(ring, "git-webhook-secret", "pod_rot_a", a.token_encrypted ?? "")).toEqual({
      ok: false,
      reason: "decrypt",
    });
    expect(await open({ current: gitKey }, "git-token", "pod_rot_a", a.token_encrypted ?? "")).toEqual({
      ok: false,
      reason: "key",
    });
    const svc = { password_encrypted: values["svc/svc_rot_a/password"] };
    expect(
      await open(
        { current: serviceNew },
        "service-password",
        "pod_rot_a/postgresql",
        svc.password_encrypted ?? "",
      ),
    ).toEqual({
      ok: true,
      value: "service-password-a",
    });

    // A second rotation re-seals again, the first one's values included.
    const again = await rotate("--key", "GIT_TOKEN_KEY");
    expect(again.code, again.out).toBe(0);
    const gitNewer = readVar(await readFile(devVars(), "utf8"), "GIT_TOKEN_KEY") ?? "";
    expect(gitNewer).not.toBe(gitNew);
    expect(readVar(await readFile(devVars(), "utf8"), "SERVICE_PASSWORD_KEY")).toBe(serviceNew);
    expect(
      await open(
        { current: gitNewer },
        "git-token",
        "pod_rot_b",
        (await sealedValues())["git/pod_rot_b/token"] ?? "",
      ),
    ).toEqual({
      ok: true,
      value: "ghp_token_b",
    });
  }, 240_000);

  it("a value no key opens is named and left as it is, the previous key kept; bad arguments are refused", async () => {
    const stray = await seal({ current: newKey() }, "git-token", "pod_rot_c", "ghp_stray");
    const vars = await readFile(devVars(), "utf8");
    const before = readVar(vars, "GIT_TOKEN_KEY") ?? "";
    await execLocalD1(dir, [
      gitConfig(
        "pod_rot_c",
        stray,
        await seal({ current: before }, "git-webhook-secret", "pod_rot_c", "whs_c"),
      ),
    ]);
    const rotated = await rotate("--key", "GIT_TOKEN_KEY");
    expect(rotated.code, rotated.out).toBe(1);
    expect(rotated.out).toContain("git_configs pod_rot_c token_encrypted cannot be opened");
    const after = await readFile(devVars(), "utf8");
    expect(readVar(after, "GIT_TOKEN_KEY_PREVIOUS")).toBe(before);
    const values = await sealedValues();
    expect(values["git/pod_rot_c/token"]).toBe(stray);
    expect(
      await sealedWith(readVar(after, "GIT_TOKEN_KEY") ?? "", values["git/pod_rot_c/webhook"] ?? ""),
    ).toBe(true);

    const bad = await rotate("--key", "STRIPE_SECRET_KEY");
    expect(bad.code).toBe(2);
    expect(bad.out).toContain("--key: one of GIT_TOKEN_KEY");
  }, 240_000);
});
