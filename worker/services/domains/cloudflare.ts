import { z } from "zod";
import { fail, ok, type Result } from "../../../shared/errors";
import type { Bindings } from "../../env";

/** Cloudflare's API v4: the base when CLOUDFLARE_API_BASE is unset. */
export const DEFAULT_CLOUDFLARE_API_BASE = "https://api.cloudflare.com/client/v4";

const CALL_TIMEOUT_MS = 15_000;
/** Cloudflare's error code for a host name some custom hostname of the zone already has */
const DUPLICATE_HOSTNAME = 1406;

/** Where and as whom the Worker reaches Cloudflare for SaaS's custom hostnames API. */
export interface CloudflareConfig {
  base: string;
  zoneId: string;
  token: string;
}

/**
 * The configuration, or null when CLOUDFLARE_API_TOKEN or CLOUDFLARE_ZONE_ID is unset (local
 * `npm start`, a service without an edge): verified domains then have `tls_status: "not_configured"`.
 */
export function cloudflareConfig(env: Bindings): CloudflareConfig | null {
  if (!env.CLOUDFLARE_API_TOKEN || !env.CLOUDFLARE_ZONE_ID) return null;
  return {
    base: (env.CLOUDFLARE_API_BASE || DEFAULT_CLOUDFLARE_API_BASE).replace(/\/+$/, ""),
    zoneId: env.CLOUDFLARE_ZONE_ID,
    token: env.CLOUDFLARE_API_TOKEN,
  };
}

/** The parts of a custom hostname object the service reads (Cloudflare answers many more). */
export const CustomHostname = z.object({
  id: z.string().min(1),
  hostname: z.string(),
  /** the host name's own state: pending, active, moved, blocked, deleted … */
  status: z.string().optional(),
  verification_errors: z.array(z.string()).optional(),
  ssl: z
    .object({
      status: z.string().optional(),
      validation_errors: z.array(z.object({ message: z.string().optional() }).passthrough()).optional(),
    })
    .passthrough()
    .optional(),
});
export type CustomHostname = z.infer<typeof CustomHostname>;

/** The v4 envelope: `{success, errors: [{code, message}], messages, result}`. */
const Envelope = z.object({
  success: z.boolean(),
  errors: z.array(z.object({ code: z.number().optional(), message: z.string().optional() })).default([]),
  result: z.unknown().optional(),
});

type Answer = { status: number; body: z.infer<typeof Envelope> };

/** Cloudflare's errors as one line, with the HTTP status: "Internal server error (1000), HTTP 500" */
const describe = (a: Answer) =>
  [
    ...a.body.errors.map((e) => `${e.message ?? "error"}${e.code !== undefined ? ` (${e.code})` : ""}`),
    `HTTP ${a.status}`,
  ].join(", ");

async function request(
  cfg: CloudflareConfig,
  method: "GET" | "POST" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
): Promise<Result<Answer>> {
  let res: Response;
  try {
    res = await fetch(`${cfg.base}/zones/${encodeURIComponent(cfg.zoneId)}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${cfg.token}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  } catch (error) {
    return fail("unavailable", `Cloudflare's API could not be reached (${String(error)})`);
  }
  const parsed = Envelope.safeParse(await res.json().catch(() => null));
  if (!parsed.success) return fail("unavailable", `Cloudflare's API answered ${res.status} without its JSON`);
  return ok({ status: res.status, body: parsed.data });
}

function hostnameOf(a: Answer): Result<CustomHostname> {
  const h = CustomHostname.safeParse(a.body.result);
  return h.success
    ? ok(h.data)
    : fail("unavailable", "Cloudflare's API answered a custom hostname it did not describe");
}

/**
 * Registers `hostname` with the zone (`POST /zones/{zone}/custom_hostnames`, a DV certificate
 * validated over HTTP: the name's CNAME to the edge is what proves it). One that is registered
 * already (a retry after a lost answer, or a name a removed domain left behind and not yet deleted)
 * is looked up and adopted, so the service never registers a name twice.
 */
export async function createCustomHostname(
  cfg: CloudflareConfig,
  hostname: string,
): Promise<Result<CustomHostname>> {
  const created = await request(cfg, "POST", "/custom_hostnames", {
    hostname,
    ssl: { method: "http", type: "dv" },
  });
  if (!created.ok) return created;
  if (created.value.body.success) return hostnameOf(created.value);
  if (created.value.body.errors.some((e) => e.code === DUPLICATE_HOSTNAME)) {
    const found = await findCustomHostname(cfg, hostname);
    if (!found.ok) return found;
    if (found.value) return ok(found.value);
  }
  return fail("unavailable", `Cloudflare did not register ${hostname}: ${describe(created.value)}`);
}

/** The zone's custom hostname for `hostname` (`GET …/custom_hostnames?hostname=`), or null. */
async function findCustomHostname(
  cfg: CloudflareConfig,
  hostname: string,
): Promise<Result<CustomHostname | null>> {
  const listed = await request(cfg, "GET", `/custom_hostnames?hostname=${encodeURIComponent(hostname)}`);
  if (!listed.ok) return listed;
  if (!listed.value.body.success)
    return fail("unavailable", `Cloudflare did not list ${hostname}: ${describe(listed.value)}`);
  const all = z.array(CustomHostname).safeParse(listed.value.body.result);
  if (!all.success) return fail("unavailable", "Cloudflare's API answered a list it did not describe");
  return ok(all.data.find((h) => h.hostname === hostname) ?? null);
}

/** The custom hostname `id` as Cloudflare has it now, or null when it has none by that id (404). */
export async function getCustomHostname(
  cfg: CloudflareConfig,
  id: string,
): Promise<Result<CustomHostname | null>> {
  const got = await request(cfg, "GET", `/custom_hostnames/${encodeURIComponent(id)}`);
  if (!got.ok) return got;
  if (got.value.status === 404) return ok(null);
  if (!got.value.body.success)
    return fail("unavailable", `Cloudflare did not answer for ${id}: ${describe(got.value)}`);
  return hostnameOf(got.value);
}

/**
 * Restarts the validation of the custom hostname `id` (`PATCH …/custom_hostnames/{id}` with the
 * same `ssl` settings it was registered with: Cloudflare's way to have a certificate whose
 * validation failed or timed out validated again). Null when Cloudflare has none by that id (404).
 */
export async function restartCustomHostname(
  cfg: CloudflareConfig,
  id: string,
): Promise<Result<CustomHostname | null>> {
  const patched = await request(cfg, "PATCH", `/custom_hostnames/${encodeURIComponent(id)}`, {
    ssl: { method: "http", type: "dv" },
  });
  if (!patched.ok) return patched;
  if (patched.value.status === 404) return ok(null);
  if (!patched.value.body.success)
    return fail(
      "unavailable",
      `Cloudflare did not restart the validation of ${id}: ${describe(patched.value)}`,
    );
  return hostnameOf(patched.value);
}

/** Deletes the custom hostname `id`; one Cloudflare does not have (404) is deleted already. */
export async function deleteCustomHostname(cfg: CloudflareConfig, id: string): Promise<Result<void>> {
  const deleted = await request(cfg, "DELETE", `/custom_hostnames/${encodeURIComponent(id)}`);
  if (!deleted.ok) return deleted;
  if (deleted.value.status === 404 || deleted.value.body.success) return ok(undefined);
  return fail("unavailable", `Cloudflare did not delete ${id}: ${describe(deleted.value)}`);
}

/** ssl.status values after which Cloudflare stops trying (the certificate will not come by itself) */
const TIMED_OUT = new Set(["validation_timed_out", "issuance_timed_out", "deployment_timed_out"]);

/**
 * What `tls_status` says of a custom hostname (docs/domains.md): `active` once both the name and its
 * certificate are; `failed: <why>` when Cloudflare reports why validation fails (its validation
 * or verification errors, a timed-out validation, a blocked name); `pending` otherwise.
 */
export function tlsStatusOf(h: CustomHostname): string {
  const ssl = h.ssl?.status ?? "";
  if (ssl === "active" && (h.status === undefined || h.status === "active")) return "active";
  const reasons = [
    ...(h.ssl?.validation_errors ?? []).map((e) => e.message ?? "").filter((m) => m !== ""),
    ...(h.verification_errors ?? []),
  ];
  if (TIMED_OUT.has(ssl)) reasons.unshift(`certificate ${ssl.replace(/_/g, " ")}`);
  if (h.status === "blocked") reasons.unshift("the host name is blocked by Cloudflare");
  if (h.status === "moved") reasons.unshift("the host name no longer points at the service (CNAME moved)");
  if (reasons.length === 0) return "pending";
  return `failed: ${reasons.join("; ").slice(0, 500)}`;
}
