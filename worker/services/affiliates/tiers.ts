/**
 * The affiliate tiers, in one place (docs/affiliates.md). Order is rank: an affiliate only moves
 * up. Money is integer cents; `commissionPercent` is an integer percent, so a commission is
 * `floor(amount × percent / 100)` in integer arithmetic, rounded down (the fraction of a cent
 * stays with the service). `milestone` is the referred revenue (cents) whose crossing upgrades to
 * the tier; null is "by arrangement": never reached automatically.
 */
export interface Tier {
  slug: string;
  name: string;
  commissionPercent: number;
  milestone: number | null;
  bonus: number;
}

export const TIERS: readonly Tier[] = [
  { slug: "starter", name: "Starter", commissionPercent: 10, milestone: 0, bonus: 0 },
  { slug: "partner", name: "Partner", commissionPercent: 15, milestone: 50_000, bonus: 2_500 },
  { slug: "pro", name: "Pro", commissionPercent: 20, milestone: 200_000, bonus: 10_000 },
  { slug: "elite", name: "Elite", commissionPercent: 20, milestone: null, bonus: 25_000 },
];

export const FIRST_TIER = TIERS[0] as Tier;

export const tierRank = (slug: string) => TIERS.findIndex((t) => t.slug === slug);

/** The tier of a slug; an unknown slug (a tier removed from the list) reads as the first. */
export const tierOf = (slug: string): Tier => TIERS.find((t) => t.slug === slug) ?? FIRST_TIER;

/** The next tier reachable by referred revenue, or undefined at the top (or before "by arrangement"). */
export function nextTier(slug: string): (Tier & { milestone: number }) | undefined {
  const next = TIERS[tierRank(slug) + 1];
  return next && next.milestone !== null ? (next as Tier & { milestone: number }) : undefined;
}

/** The tiers above `slug` whose milestone `revenue` has reached, lowest first. */
export const tiersReached = (slug: string, revenue: number): Tier[] =>
  TIERS.slice(tierRank(slug) + 1).filter((t) => t.milestone !== null && revenue >= t.milestone);

/** Commission in cents, rounded down: integer multiplication then integer division. */
export const commissionOf = (amount: number, percent: number) => Math.floor((amount * percent) / 100);
