/**
 * The product catalog in one place: plans (quotas and prices), presets, regions and runtimes.
 * The Worker serves it, places and bills pods with it; the agent sizes containers from it.
 */

export const PLAN_SLUGS = ["launch", "build", "grow", "scale", "turbo"] as const;
export type PlanSlug = (typeof PLAN_SLUGS)[number];

export interface Plan {
  slug: PlanSlug;
  name: string;
  cpu: number;
  memoryMb: number;
  diskGb: number;
  /** cents per month */
  monthlyPrice: number;
  backupsKept: number;
  databaseServices: boolean;
  /**
   * Build minutes a pod of the plan may use per UTC day (git deploys' wall time on the host,
   * docs/git.md "Build budget"), so back-to-back deploys cannot make a small pod a larger one.
   */
  buildMinutesPerDay: number;
  /**
   * Log history (docs/logs.md): the days of a pod's app, web and error logs the host keeps, and
   * the most that history may take on the host's disk, compressed (oldest days go first past it).
   */
  logHistoryDays: number;
  logHistoryMb: number;
}

const plan = (p: Plan) => p;

/** Ordered by size. Prices in cents. */
export const PLANS: readonly Plan[] = [
  plan({
    slug: "launch",
    name: "Launch",
    cpu: 1,
    memoryMb: 512,
    diskGb: 5,
    monthlyPrice: 500,
    backupsKept: 1,
    databaseServices: false,
    buildMinutesPerDay: 30,
    logHistoryDays: 7,
    logHistoryMb: 64,
  }),
  plan({
    slug: "build",
    name: "Build",
    cpu: 1,
    memoryMb: 1024,
    diskGb: 10,
    monthlyPrice: 1200,
    backupsKept: 5,
    databaseServices: true,
    buildMinutesPerDay: 60,
    logHistoryDays: 14,
    logHistoryMb: 128,
  }),
  plan({
    slug: "grow",
    name: "Grow",
    cpu: 2,
    memoryMb: 2048,
    diskGb: 20,
    monthlyPrice: 2400,
    backupsKept: 10,
    databaseServices: true,
    buildMinutesPerDay: 120,
    logHistoryDays: 14,
    logHistoryMb: 256,
  }),
  plan({
    slug: "scale",
    name: "Scale",
    cpu: 4,
    memoryMb: 4096,
    diskGb: 40,
    monthlyPrice: 4800,
    backupsKept: 15,
    databaseServices: true,
    buildMinutesPerDay: 240,
    logHistoryDays: 30,
    logHistoryMb: 512,
  }),
  plan({
    slug: "turbo",
    name: "Turbo",
    cpu: 8,
    memoryMb: 8192,
    diskGb: 80,
    monthlyPrice: 9600,
    backupsKept: 30,
    databaseServices: true,
    buildMinutesPerDay: 480,
    logHistoryDays: 30,
    logHistoryMb: 1024,
  }),
];

export const findPlan = (slug: string): Plan | undefined => PLANS.find((p) => p.slug === slug);

/** A day's charge: a 365-day year of monthly prices, rounded up to the cent so 365 days never undercharge. */
export const dailyPrice = (p: Plan): number => Math.ceil((p.monthlyPrice * 12) / 365);

/** "512MB", "1GB": the Pod resource shows sizes with a unit. */
export const formatMemory = (mb: number): string => (mb % 1024 === 0 ? `${mb / 1024}GB` : `${mb}MB`);
export const formatDisk = (gb: number): string => `${gb}GB`;

export const PRESET_SLUGS = ["static", "php", "nodejs", "python"] as const;
export type PresetSlug = (typeof PRESET_SLUGS)[number];

export const APP_ROOT = "/home/pod_user/app";
export const POD_USER = "pod_user";

export interface Preset {
  slug: PresetSlug;
  name: string;
  /** the port the pod's web entry point listens on inside the pod */
  port: number;
  appRoot: string;
  publicRoot: string;
}

export const PRESETS: readonly Preset[] = [
  { slug: "static", name: "Static site (nginx)", port: 8080, appRoot: APP_ROOT, publicRoot: APP_ROOT },
  { slug: "php", name: "PHP (nginx + PHP-FPM)", port: 8080, appRoot: APP_ROOT, publicRoot: APP_ROOT },
  { slug: "nodejs", name: "Node.js", port: 3000, appRoot: APP_ROOT, publicRoot: `${APP_ROOT}/public` },
  { slug: "python", name: "Python", port: 8000, appRoot: APP_ROOT, publicRoot: `${APP_ROOT}/static` },
];

export const findPreset = (slug: string): Preset | undefined => PRESETS.find((p) => p.slug === slug);

export interface Runtime {
  preset: PresetSlug;
  name: string;
  versions: string[];
  default: string;
}

export const NODE_VERSIONS = ["18", "20", "22", "24"] as const;

export const RUNTIMES: readonly Runtime[] = [
  { preset: "static", name: "nginx", versions: ["1.22"], default: "1.22" },
  { preset: "php", name: "php", versions: ["8.2"], default: "8.2" },
  { preset: "nodejs", name: "node", versions: [...NODE_VERSIONS], default: "20" },
  { preset: "python", name: "python", versions: ["3.11"], default: "3.11" },
];

export interface Region {
  slug: string;
  name: string;
  /** ISO country codes served from this region when the client does not name one */
  countries: readonly string[];
}

export const REGIONS: readonly Region[] = [
  {
    slug: "eu-central",
    name: "Europe (Frankfurt)",
    countries: ["DE", "AT", "CH", "PL", "CZ", "NL", "BE", "LU", "DK", "SE", "NO", "FI", "IT"],
  },
  { slug: "eu-west", name: "Europe (London)", countries: ["GB", "IE", "FR", "ES", "PT", "IS"] },
  { slug: "us-east", name: "US East (Virginia)", countries: ["US", "CA", "MX", "BR", "AR", "CO", "CL"] },
  {
    slug: "ap-southeast",
    name: "Asia Pacific (Singapore)",
    countries: ["SG", "MY", "ID", "TH", "VN", "PH", "AU", "NZ", "JP", "KR", "IN"],
  },
];

export const DEFAULT_REGION = "eu-central";
export const findRegion = (slug: string): Region | undefined => REGIONS.find((r) => r.slug === slug);
