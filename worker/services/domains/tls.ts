import { and, asc, eq, isNull, ne, or } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { ok, type Result } from "../../../shared/errors";
import {
  type CustomHostnameRemovalRow,
  customHostnameRemovals,
  type DomainRow,
  domains,
} from "../../db/schema";
import { nowIso } from "../../lib/time";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "../pods/events";
import {
  type CloudflareConfig,
  type CustomHostname,
  cloudflareConfig,
  createCustomHostname,
  deleteCustomHostname,
  getCustomHostname,
  restartCustomHostname,
  tlsStatusOf,
} from "./cloudflare";

/**
 * TLS for verified custom domains (docs/domains.md, "TLS"): each verified name is registered with
 * Cloudflare for SaaS as a custom hostname, whose certificate Cloudflare issues and serves at the
 * edge. `tls_status` says where it is: `not_configured` (no Cloudflare settings), `pending`,
 * `active`, or `failed: <why>`. Registration happens at verification; the cron (and verifying a
 * verified domain again) polls the ones not yet active; a removed domain, released name or deleted
 * pod deletes its custom hostname, and one Cloudflare failed to delete is queued in
 * `custom_hostname_removals` and deleted by the cron, never forgotten.
 */

export const NOT_CONFIGURED = "not_configured";
/** how a failed `tls_status` begins: `failed: <why>` (cloudflare.ts tlsStatusOf) */
export const FAILED = "failed: ";
/** domains polled and queued removals retried per cron run (each is one subrequest) */
const PER_RUN = 20;

const stillVerified = (id: string) => and(eq(domains.id, id), eq(domains.status, "verified"));

/**
 * Registers the verified domain's host name and records the custom hostname's id and `tls_status`.
 * Cloudflare unreachable: `pending`, and the cron registers it later. A domain removed or released
 * meanwhile gets its fresh custom hostname deleted again (or queued for the cron).
 */
export async function registerDomainTls(ctx: ServiceContext, row: DomainRow): Promise<string> {
  const cfg = cloudflareConfig(ctx.env);
  const checkedAt = nowIso();
  if (!cfg) {
    await ctx.db
      .update(domains)
      .set({ tlsStatus: NOT_CONFIGURED, tlsCheckedAt: checkedAt })
      .where(stillVerified(row.id));
    return NOT_CONFIGURED;
  }
  const created = await createCustomHostname(cfg, row.domain);
  if (!created.ok) {
    console.warn(
      JSON.stringify({ msg: "custom hostname not registered", domain: row.domain, error: created.message }),
    );
    await ctx.db
      .update(domains)
      .set({ tlsStatus: "pending", tlsCheckedAt: checkedAt })
      .where(stillVerified(row.id));
    return "pending";
  }
  const tlsStatus = tlsStatusOf(created.value);
  const [kept] = await ctx.db.batch([
    ctx.db
      .update(domains)
      .set({ tlsStatus, tlsHostnameId: created.value.id, tlsCheckedAt: checkedAt })
      .where(stillVerified(row.id))
      .returning({ id: domains.id }),
    // a hostname adopted from a removal still queued is this domain's now: not to be deleted
    ctx.db.delete(customHostnameRemovals).where(eq(customHostnameRemovals.id, created.value.id)),
  ]);
  if (kept.length === 0) {
    const cleanup = await hostnameRemovalStatements(ctx, [{ ...row, tlsHostnameId: created.value.id }]);
    const [head, ...rest] = cleanup;
    if (head) await ctx.db.batch([head, ...rest]);
  }
  return tlsStatus;
}

/**
 * Looks at the verified domain's custom hostname again and records its `tls_status`, with a
 * `domain_tls` event when it becomes active or a failure reason first shows. No hostname yet (or
 * Cloudflare no longer has it): registered. Cloudflare unreachable: left as it was, for the next run.
 */
export async function refreshDomainTls(ctx: ServiceContext, row: DomainRow): Promise<string | null> {
  const cfg = cloudflareConfig(ctx.env);
  if (!cfg || !row.tlsHostnameId) return registerDomainTls(ctx, row);
  const got = await getCustomHostname(cfg, row.tlsHostnameId);
  if (!got.ok) {
    await ctx.db.update(domains).set({ tlsCheckedAt: nowIso() }).where(stillVerified(row.id));
    return row.tlsStatus;
  }
  if (got.value === null) return registerDomainTls(ctx, { ...row, tlsHostnameId: null });
  return recordTlsStatus(ctx, row, got.value);
}

/**
 * The owner's restart of a certificate whose validation failed (`POST …/verify` on a verified
 * domain whose `tls_status` is `failed: …`): Cloudflare validates the custom hostname again (a
 * `PATCH` with its `ssl` settings), or registers the name anew when it no longer has it; a
 * `domain_tls` event says so. Cloudflare unreachable or refusing: 503, the failure left as it was.
 */
export async function restartDomainTls(ctx: ServiceContext, row: DomainRow): Promise<Result<string>> {
  const cfg = cloudflareConfig(ctx.env);
  if (!cfg || !row.tlsHostnameId) return ok(await registerDomainTls(ctx, row));
  const restarted = await restartCustomHostname(cfg, row.tlsHostnameId);
  if (!restarted.ok) return restarted;
  if (restarted.value === null) return ok(await registerDomainTls(ctx, { ...row, tlsHostnameId: null }));
  const tlsStatus = tlsStatusOf(restarted.value);
  await ctx.db.batch([
    ctx.db
      .update(domains)
      .set({ tlsStatus, tlsCheckedAt: nowIso() })
      .where(and(stillVerified(row.id), eq(domains.tlsHostnameId, restarted.value.id))),
    recordEventStatement(
      ctx.db,
      row.podId,
      "domain_tls",
      `${row.domain}: its certificate's validation was restarted (it had ${row.tlsStatus ?? "no state"})`,
      { domain: row.domain, tls_status: tlsStatus },
    ),
  ]);
  return ok(tlsStatus);
}

async function recordTlsStatus(ctx: ServiceContext, row: DomainRow, h: CustomHostname): Promise<string> {
  const tlsStatus = tlsStatusOf(h);
  const update = ctx.db
    .update(domains)
    .set({ tlsStatus, tlsCheckedAt: nowIso() })
    .where(and(stillVerified(row.id), eq(domains.tlsHostnameId, h.id)));
  if (tlsStatus === row.tlsStatus || tlsStatus === "pending") await update;
  else
    await ctx.db.batch([
      update,
      recordEventStatement(
        ctx.db,
        row.podId,
        "domain_tls",
        tlsStatus === "active"
          ? `${row.domain}: its certificate is active; the edge serves it over HTTPS`
          : `${row.domain}: its certificate is not issued: ${tlsStatus.slice(FAILED.length)}`,
        { domain: row.domain, tls_status: tlsStatus },
      ),
    ]);
  return tlsStatus;
}

type Removable = Pick<DomainRow, "domain" | "podId" | "tlsHostnameId">;

/**
 * For domains about to go (removed, released, their pod deleted): deletes each one's custom
 * hostname at Cloudflare, and answers the statements the caller adds to the batch that drops the
 * rows — for each hostname Cloudflare did not delete, a `custom_hostname_removals` row the cron
 * retries and a `domain_tls` event saying so.
 */
export async function hostnameRemovalStatements(
  ctx: ServiceContext,
  rows: Removable[],
): Promise<BatchItem<"sqlite">[]> {
  const cfg = cloudflareConfig(ctx.env);
  const statements: BatchItem<"sqlite">[] = [];
  for (const row of rows) {
    const id = row.tlsHostnameId;
    if (!id) continue;
    const deleted = cfg ? await deleteCustomHostname(cfg, id) : null;
    if (deleted?.ok) continue;
    const error = deleted ? deleted.message : "Cloudflare is not configured";
    const now = nowIso();
    statements.push(
      ctx.db
        .insert(customHostnameRemovals)
        .values({
          id,
          hostname: row.domain,
          podId: row.podId,
          lastError: error,
          createdAt: now,
          attemptedAt: now,
        })
        .onConflictDoNothing(),
      recordEventStatement(
        ctx.db,
        row.podId,
        "domain_tls",
        `${row.domain}: its custom hostname could not be deleted at Cloudflare yet (${error}); retried hourly`,
        { domain: row.domain, tls_status: "removal_pending" },
      ),
    );
  }
  return statements;
}

/**
 * The cron's TLS work (worker/scheduled.ts, job `domain-tls`): queued hostname removals retried,
 * then verified domains not yet `active` polled, the longest unchecked first. Without Cloudflare
 * settings it only marks verified domains `not_configured`.
 */
export async function pollDomainTls(ctx: ServiceContext): Promise<{ removed: number; polled: number }> {
  const cfg = cloudflareConfig(ctx.env);
  if (!cfg) {
    await ctx.db
      .update(domains)
      .set({ tlsStatus: NOT_CONFIGURED })
      .where(and(eq(domains.status, "verified"), isNull(domains.tlsStatus)));
    return { removed: 0, polled: 0 };
  }
  const removed = await retryRemovals(ctx, cfg);
  const due = await ctx.db
    .select()
    .from(domains)
    .where(
      and(eq(domains.status, "verified"), or(isNull(domains.tlsStatus), ne(domains.tlsStatus, "active"))),
    )
    .orderBy(asc(domains.tlsCheckedAt))
    .limit(PER_RUN);
  for (const row of due) await refreshDomainTls(ctx, row);
  return { removed, polled: due.length };
}

async function retryRemovals(ctx: ServiceContext, cfg: CloudflareConfig): Promise<number> {
  const queued: CustomHostnameRemovalRow[] = await ctx.db
    .select()
    .from(customHostnameRemovals)
    .orderBy(asc(customHostnameRemovals.attemptedAt))
    .limit(PER_RUN);
  let removed = 0;
  for (const q of queued) {
    // a verified domain adopted this hostname since (registerDomainTls): it is in use, not to delete
    const [inUse] = await ctx.db
      .select({ id: domains.id })
      .from(domains)
      .where(eq(domains.tlsHostnameId, q.id))
      .limit(1);
    const deleted = inUse ? null : await deleteCustomHostname(cfg, q.id);
    if (inUse || deleted?.ok) {
      await ctx.db.delete(customHostnameRemovals).where(eq(customHostnameRemovals.id, q.id));
      if (!inUse) removed++;
      continue;
    }
    await ctx.db
      .update(customHostnameRemovals)
      .set({ attempts: q.attempts + 1, lastError: deleted?.message ?? q.lastError, attemptedAt: nowIso() })
      .where(eq(customHostnameRemovals.id, q.id));
  }
  return removed;
}
