import { createHash, randomBytes } from "node:crypto";
import { findRegion, REGIONS } from "../../shared/catalog";
import { newId } from "../../shared/ids";
import { AGENT_TOKEN_PREFIX } from "../../shared/protocol";
import { type D1Target, d1Execute, sqlText } from "./d1";

export interface HostRegistration {
  name: string;
  region: string;
  sshHost: string;
  sshPortMin: number;
  sshPortMax: number;
  cpu: number;
  memoryMb: number;
  diskGb: number;
  /**
   * Where the edge reaches the host's ingress (docs/edge.md): `http(s)://host[:port]`, no path; in
   * production its tunnel or public address, locally `http://127.0.0.1:<ingress port>`
   */
  ingressOrigin?: string;
}

/** An ingress origin as the edge uses it (scheme, host, port), or an error naming what is wrong. */
export function parseIngressOrigin(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new Error(`ingress origin ${JSON.stringify(text)} is not a URL (e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error("the ingress origin must be http:// or https://");
  if (url.pathname !== "/" || url.search || url.hash || url.username || url.password)
    throw new Error("the ingress origin is scheme, host and port only (no path, query or credentials)");
  return url.origin;
}

/** A new agent token (`hat_…`) and the SHA-256 hex the Worker checks it against; only the hash is stored. */
export function issueAgentToken(): { token: string; hash: string } {
  const token = `${AGENT_TOKEN_PREFIX}${randomBytes(30).toString("base64url")}`;
  return { token, hash: createHash("sha256").update(token).digest("hex") };
}

/**
 * Registers a host (or, with `rotate`, issues a new agent token for an existing one) and returns the
 * agent token. Only its SHA-256 is stored, exactly as the Worker checks it.
 */
export async function registerHost(
  host: HostRegistration,
  options: D1Target & { rotate?: boolean } = {},
): Promise<{ hostId: string; token: string; created: boolean }> {
  if (!findRegion(host.region)) {
    throw new Error(`unknown region ${host.region}; one of ${REGIONS.map((r) => r.slug).join(", ")}`);
  }
  if (!(host.sshPortMin > 0 && host.sshPortMax >= host.sshPortMin && host.sshPortMax < 65536)) {
    throw new Error("the SSH port range must be within 1-65535, min ≤ max");
  }
  const origin = host.ingressOrigin === undefined ? null : parseIngressOrigin(host.ingressOrigin);
  const { token, hash } = issueAgentToken();
  const existing = await d1Execute<{ id: string }>(
    `SELECT id FROM hosts WHERE name = ${sqlText(host.name)}`,
    options,
  );
  const found = existing[0];
  if (found) {
    if (!options.rotate)
      throw new Error(`host ${host.name} exists; pass --rotate to issue a new agent token`);
    await d1Execute(
      `UPDATE hosts SET agent_token_hash = ${sqlText(hash)}, region = ${sqlText(host.region)}, ssh_host = ${sqlText(host.sshHost)},
        ssh_port_min = ${host.sshPortMin}, ssh_port_max = ${host.sshPortMax}, cpu = ${host.cpu},
        memory_mb = ${host.memoryMb}, disk_gb = ${host.diskGb}${origin === null ? "" : `, ingress_origin = ${sqlText(origin)}`}
        WHERE id = ${sqlText(found.id)}`,
      options,
    );
    return { hostId: found.id, token, created: false };
  }
  const id = newId("host");
  await d1Execute(
    `INSERT INTO hosts (id, name, region, ssh_host, ssh_port_min, ssh_port_max, cpu, memory_mb, disk_gb, agent_token_hash, ingress_origin, created_at)
     VALUES (${sqlText(id)}, ${sqlText(host.name)}, ${sqlText(host.region)}, ${sqlText(host.sshHost)}, ${host.sshPortMin},
       ${host.sshPortMax}, ${host.cpu}, ${host.memoryMb}, ${host.diskGb}, ${sqlText(hash)},
       ${origin === null ? "NULL" : sqlText(origin)}, ${sqlText(new Date().toISOString())})`,
    options,
  );
  return { hostId: id, token, created: true };
}

/** Sets or lifts a host's drain (by name or id); fails when no host matches. */
export async function drainHost(nameOrId: string, drained: boolean, target: D1Target = {}): Promise<void> {
  const rows = await d1Execute<{ id: string }>(
    `UPDATE hosts SET drained = ${drained ? 1 : 0} WHERE name = ${sqlText(nameOrId)} OR id = ${sqlText(nameOrId)} RETURNING id`,
    target,
  );
  if (rows.length === 0) throw new Error(`no host named ${nameOrId}`);
}
