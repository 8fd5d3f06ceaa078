import {
  dailyPrice,
  formatDisk,
  formatMemory,
  PLANS,
  PRESETS,
  REGIONS,
  RUNTIMES,
} from "../../../shared/catalog";
import type { ServiceContext } from "../context";
import { regionsWithPlaceableHosts } from "../hosts/hosts";

/**
 * The catalog as the API shows it: plans, presets and runtimes from shared/catalog.ts, and the
 * regions with whether each can take a new pod now.
 */

// The catalog is configuration: computed once per isolate, not per request.
const plans = PLANS.map((p) => ({
  slug: p.slug,
  name: p.name,
  cpu: p.cpu,
  memory: formatMemory(p.memoryMb),
  disk: formatDisk(p.diskGb),
  monthly_price: p.monthlyPrice,
  daily_price: dailyPrice(p),
  backups_kept: p.backupsKept,
  database_services: p.databaseServices,
}));
const presets = PRESETS.map((p) => ({
  slug: p.slug,
  name: p.name,
  port: p.port,
  app_root: p.appRoot,
  public_root: p.publicRoot,
}));
const runtimes = RUNTIMES.map((r) => ({ ...r, versions: [...r.versions] }));

export const listPlans = () => plans;
export const listPresets = () => presets;
export const listRuntimes = () => runtimes;

/** Every region; `available` while at least one of its hosts takes pods (connected, no problem, not drained). */
export async function listRegions({ ctx }: { ctx: ServiceContext }) {
  const online = await regionsWithPlaceableHosts(ctx.db);
  return REGIONS.map((r) => ({ slug: r.slug, name: r.name, available: online.has(r.slug) }));
}
