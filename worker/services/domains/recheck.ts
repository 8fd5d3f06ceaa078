import { and, asc, eq, isNull, lte, or } from "drizzle-orm";
import { type DomainRow, domains } from "../../db/schema";
import { HOUR } from "../../lib/time";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "../pods/events";
import { readPodRow } from "../pods/lookup";
import { lookupTxt } from "./dns";
import { verificationName } from "./names";
import { pushVerifiedDomains } from "./sync";
import { hostnameRemovalStatements } from "./tls";

/** How often a verified domain's TXT record is looked up again (docs/domains.md). */
export const RECHECK_EVERY_MS = 12 * HOUR;
/** How long the record may be missing before the name is released (docs/domains.md). */
export const RELEASE_AFTER_MS = 72 * HOUR;
/** verified domains looked up per cron run, oldest check first (each is one DNS-over-HTTPS subrequest) */
const PER_RUN = 40;
const AT_ONCE = 5;

export interface RecheckOutcome {
  checked: number;
  released: string[];
}

/**
 * The cron's re-check of verified domains (worker/scheduled.ts): each one whose last check is
 * RECHECK_EVERY_MS old has its `_podhost-verify` TXT record looked up again. Found: `checked_at`
 * moves on and any `missing_since` is cleared. Missing: `missing_since` is set at the first miss;
 * once it is RELEASE_AFTER_MS old the name is released — the pod's host is told to stop serving it,
 * the row goes back to `pending` (its owner may publish the record and verify again; until then any
 * other pod may claim and verify the name) and a `domain_released` event is recorded. A resolver
 * that fails proves nothing: the domain is left as it was and looked at again next run, as is one
 * whose host cannot be told now.
 */
export async function recheckVerifiedDomains(ctx: ServiceContext, now: number): Promise<RecheckOutcome> {
  const due = await ctx.db
    .select()
    .from(domains)
    .where(
      and(
        eq(domains.status, "verified"),
        // never checked: a name verified before re-checks existed is due at once (NULLs sort first)
        or(isNull(domains.checkedAt), lte(domains.checkedAt, new Date(now - RECHECK_EVERY_MS).toISOString())),
      ),
    )
    .orderBy(asc(domains.checkedAt))
    .limit(PER_RUN);
  const outcome: RecheckOutcome = { checked: 0, released: [] };
  for (let i = 0; i < due.length; i += AT_ONCE) {
    await Promise.all(
      due.slice(i, i + AT_ONCE).map(async (row) => {
        const result = await recheckOne(ctx, row, now);
        if (result === "released") outcome.released.push(row.domain);
        if (result !== "skipped") outcome.checked++;
      }),
    );
  }
  return outcome;
}

async function recheckOne(
  ctx: ServiceContext,
  row: DomainRow,
  now: number,
): Promise<"found" | "missing" | "released" | "skipped"> {
  const txt = await lookupTxt(ctx.env, verificationName(row.domain));
  if (!txt.ok) return "skipped";
  const nowIso = new Date(now).toISOString();
  const still = and(eq(domains.id, row.id), eq(domains.status, "verified"));
  if (txt.value.includes(row.verificationToken)) {
    await ctx.db.update(domains).set({ checkedAt: nowIso, missingSince: null }).where(still);
    return "found";
  }
  const missingSince = row.missingSince ?? nowIso;
  if (now - Date.parse(missingSince) < RELEASE_AFTER_MS) {
    await ctx.db.update(domains).set({ checkedAt: nowIso, missingSince }).where(still);
    return "missing";
  }
  const found = await readPodRow(ctx.db, row.podId);
  if (found) {
    // off the host first (the list without it), as a removal does; a host that cannot be told now
    // is tried again at the next run (one without the pod's container has nothing to stop serving)
    const told = await pushVerifiedDomains(ctx, found, row.id);
    if (!told.ok && told.code !== "conflict") {
      console.warn(
        JSON.stringify({ msg: "domain release: host not told", domain: row.domain, error: told.message }),
      );
      return "skipped";
    }
  }
  // its custom hostname goes too (tls.ts): whoever verifies the name next registers it again
  const tlsCleanup = await hostnameRemovalStatements(ctx, [row]);
  await ctx.db.batch([
    ctx.db
      .update(domains)
      .set({
        status: "pending",
        verifiedAt: null,
        checkedAt: null,
        missingSince: null,
        tlsStatus: null,
        tlsHostnameId: null,
        tlsCheckedAt: null,
      })
      .where(still),
    ...tlsCleanup,
    recordEventStatement(
      ctx.db,
      row.podId,
      "domain_released",
      `${row.domain} released: its TXT record ${verificationName(row.domain)} has been missing since ${missingSince}; publish it and verify again to serve the name`,
      { domain: row.domain, missing_since: missingSince },
    ),
  ]);
  return "released";
}
