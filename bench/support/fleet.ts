/**
 * A fleet in local D1 for the benches that need one at scale (bench/billing.ts, bench/scale.ts): `pods`
 * pods spread over `teams` teams, and optionally an owner account per team and the hosts the pods are
 * placed on. Rows go in as multi-row INSERTs, 5,000 rows per batch (one transaction each).
 *
 * Pod `i` is `pod_<i>` named `pod-<i>`, in team `i % teams`, `stopped` when `i % 7 === 0` and `running`
 * otherwise, on plan launch/build/grow/scale/turbo in turn; with hosts it is placed on host
 * `i % hosts.length` with that host's next SSH port. The bench that seeded a fleet can therefore
 * name any of its rows without reading them back (`fleetPod`, `teamIdOf`, `userIdOf`).
 */
import { createHash } from "node:crypto";
import type { Miniflare } from "miniflare";
import { findPlan, PLAN_SLUGS } from "../../shared/catalog";
import { randomToken } from "../../shared/ids";

/** The D1 binding as Miniflare hands it to Node. */
export type LocalD1 = Awaited<ReturnType<Miniflare["getD1Database"]>>;

export interface FleetHost {
  id: string;
  name: string;
  /** SHA-256 hex of the host's agent token, as `registerHost` stores it */
  tokenHash: string;
}

export interface FleetOptions {
  pods: number;
  teams: number;
  /** Place the pods on these hosts (round robin), registered here. Without: pods have no host. */
  hosts?: readonly FleetHost[];
  /**
   * Also an owner per team: a user whose personal team it is, with its membership (what a signed-in
   * request reads). Without: only pod rows, which is all the billing accrual reads.
   */
  accounts?: boolean;
  region?: string;
  /** every row's created/updated time */
  now?: string;
}

export const FLEET_REGION = "eu-west";
export const FLEET_SSH_PORT_MIN = 2200;
/** hosts are registered with room for far more than the fleet puts on them */
export const FLEET_HOST_CAPACITY = { cpu: 100_000, memoryMb: 100_000_000, diskGb: 10_000_000 };
/** rows per INSERT (well under D1's 100 KB statement) and INSERTs per batch (one transaction) */
const ROWS_PER_INSERT = 200;
const INSERTS_PER_BATCH = 25;

const pad = (n: number) => String(n).padStart(8, "0");
export const teamIdOf = (k: number) => `team_${pad(k)}`;
export const userIdOf = (k: number) => `usr_${pad(k)}`;

export interface FleetPod {
  id: string;
  name: string;
  teamId: string;
  status: "running" | "stopped";
  planSlug: string;
  /** index into `hosts`, or undefined without hosts */
  host: number | undefined;
  sshPort: number | null;
  /** a placed running pod's address, as its host reported it (what the simulated agents report too) */
  ip: string | null;
}

export function fleetPod(i: number, options: Pick<FleetOptions, "teams" | "hosts">): FleetPod {
  const hostCount = options.hosts?.length ?? 0;
  return {
    id: `pod_${i}`,
    name: `pod-${i}`,
    teamId: teamIdOf(i % options.teams),
    status: i % 7 === 0 ? "stopped" : "running",
    planSlug: PLAN_SLUGS[i % PLAN_SLUGS.length] as string,
    host: hostCount > 0 ? i % hostCount : undefined,
    sshPort: hostCount > 0 ? FLEET_SSH_PORT_MIN + Math.floor(i / hostCount) : null,
    ip: hostCount > 0 && i % 7 !== 0 ? `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` : null,
  };
}

/** The pods placed on host `h` (their indices), in order. */
export function podsOfHost(h: number, options: Pick<FleetOptions, "pods" | "hosts">): number[] {
  const hostCount = options.hosts?.length ?? 0;
  const out: number[] = [];
  for (let i = h; hostCount > 0 && i < options.pods; i += hostCount) out.push(i);
  return out;
}

type Value = string | number | null;
const literal = (v: Value) =>
  v === null ? "NULL" : typeof v === "number" ? String(v) : `'${v.replaceAll("'", "''")}'`;

/**
 * `count` rows into `table`, many rows per INSERT (as literals: D1 binds at most 100 parameters per
 * statement) and many INSERTs per batch: one statement per row through Miniflare's proxy costs
 * ~2 ms a row, which is minutes for a fleet.
 */
export async function insertRows(
  d1: LocalD1,
  table: string,
  columns: readonly string[],
  count: number,
  row: (i: number) => Value[],
) {
  let statements: ReturnType<LocalD1["prepare"]>[] = [];
  const flush = async () => {
    if (statements.length) await d1.batch(statements);
    statements = [];
  };
  for (let from = 0; from < count; from += ROWS_PER_INSERT) {
    const values: string[] = [];
    for (let i = from; i < Math.min(count, from + ROWS_PER_INSERT); i++) {
      values.push(`(${row(i).map(literal).join(", ")})`);
    }
    statements.push(d1.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES ${values.join(", ")}`));
    if (statements.length === INSERTS_PER_BATCH) await flush();
  }
  await flush();
}

export async function seedFleet(d1: LocalD1, options: FleetOptions): Promise<void> {
  const now = options.now ?? "2030-01-01T00:00:00.000Z";
  const region = options.region ?? FLEET_REGION;
  const hosts = options.hosts ?? [];

  if (options.accounts) {
    // A user first (the team's owner), then the team (owner_id is a foreign key), then the membership.
    await insertRows(
      d1,
      "users",
      [
        "id",
        "email",
        "name",
        "password_hash",
        "email_verified_at",
        "active_team_id",
        "created_at",
        "updated_at",
      ],
      options.teams,
      (k) => [userIdOf(k), `u${k}@bench.example`, `User ${k}`, "bench-no-login", now, teamIdOf(k), now, now],
    );
    await insertRows(
      d1,
      "teams",
      ["id", "name", "slug", "owner_id", "account_type", "created_at", "updated_at"],
      options.teams,
      (k) => [teamIdOf(k), `Team ${k}`, `t-${k}`, userIdOf(k), "personal", now, now],
    );
    await insertRows(
      d1,
      "team_members",
      ["id", "team_id", "user_id", "role", "joined_at"],
      options.teams,
      (k) => [`tm_${pad(k)}`, teamIdOf(k), userIdOf(k), "owner", now],
    );
  }

  if (hosts.length > 0) {
    // What the pods below take of each host, as the placement would have reserved it.
    const allocated = hosts.map(() => ({ cpu: 0, memoryMb: 0, diskGb: 0 }));
    for (let i = 0; i < options.pods; i++) {
      const pod = fleetPod(i, { ...options, hosts });
      const plan = findPlan(pod.planSlug);
      const sum = allocated[pod.host ?? 0];
      if (plan && sum) {
        sum.cpu += plan.cpu;
        sum.memoryMb += plan.memoryMb;
        sum.diskGb += plan.diskGb;
      }
    }
    const { cpu, memoryMb, diskGb } = FLEET_HOST_CAPACITY;
    await insertRows(
      d1,
      "hosts",
      [
        "id",
        "name",
        "region",
        "ssh_host",
        "ssh_port_min",
        "ssh_port_max",
        "cpu",
        "memory_mb",
        "disk_gb",
        "allocated_cpu",
        "allocated_memory_mb",
        "allocated_disk_gb",
        "agent_token_hash",
        "created_at",
      ],
      hosts.length,
      (h) => {
        const { id, name, tokenHash } = hosts[h] as FleetHost;
        const a = allocated[h] ?? { cpu: 0, memoryMb: 0, diskGb: 0 };
        return [
          id,
          name,
          region,
          "127.0.0.1",
          FLEET_SSH_PORT_MIN,
          65535,
          cpu,
          memoryMb,
          diskGb,
          a.cpu,
          a.memoryMb,
          a.diskGb,
          tokenHash,
          now,
        ];
      },
    );
  }

  await insertRows(
    d1,
    "pods",
    [
      "id",
      "name",
      "team_id",
      "preset",
      "status",
      "plan_slug",
      "region",
      "host_id",
      "ssh_port",
      "ip",
      "created_at",
      "updated_at",
    ],
    options.pods,
    (i) => {
      const pod = fleetPod(i, { ...options, hosts });
      const hostId = pod.host === undefined ? null : (hosts[pod.host]?.id ?? null);
      return [
        pod.id,
        pod.name,
        pod.teamId,
        "static",
        pod.status,
        pod.planSlug,
        region,
        hostId,
        pod.sshPort,
        pod.ip,
        now,
        now,
      ];
    },
  );
}

/**
 * A session for each of the given owners (by team index), as a sign-in makes one (only the SHA-256 of
 * the token is stored); returns the Bearer tokens in the same order.
 */
export async function seedSessions(
  d1: LocalD1,
  owners: readonly number[],
  now = new Date(),
): Promise<string[]> {
  const tokens = owners.map(() => randomToken(40));
  const expires = new Date(now.getTime() + 30 * 24 * 3600_000).toISOString();
  await insertRows(
    d1,
    "sessions",
    ["id", "token_hash", "user_id", "kind", "expires_at", "created_at"],
    owners.length,
    (j) => [
      `ses_bench${pad(j)}`,
      createHash("sha256")
        .update(tokens[j] as string)
        .digest("hex"),
      userIdOf(owners[j] as number),
      "session",
      expires,
      now.toISOString(),
    ],
  );
  return tokens;
}
