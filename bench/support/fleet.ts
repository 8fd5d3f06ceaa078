/**
 * A fleet in local D1 for the benches that need one at scale (bench/billing.ts, bench/scale.ts): `pods`
 * pods spread over `teams` teams, and optionally an owner account per team and the hosts the pods are
 * placed on. Rows go in through prepared statements in batches of 1,000 (one transaction each).
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
const BATCH = 1000;

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
  };
}

/** The pods placed on host `h` (their indices), in order. */
export function podsOfHost(h: number, options: Pick<FleetOptions, "pods" | "hosts">): number[] {
  const hostCount = options.hosts?.length ?? 0;
  const out: number[] = [];
  for (let i = h; hostCount > 0 && i < options.pods; i += hostCount) out.push(i);
  return out;
}

async function inBatches(d1: LocalD1, count: number, statement: (i: number) => D1PreparedLike) {
  let batch: D1PreparedLike[] = [];
  for (let i = 0; i < count; i++) {
    batch.push(statement(i));
    if (batch.length === BATCH) {
      await d1.batch(batch as Parameters<LocalD1["batch"]>[0]);
      batch = [];
    }
  }
  if (batch.length) await d1.batch(batch as Parameters<LocalD1["batch"]>[0]);
}
type D1PreparedLike = ReturnType<ReturnType<LocalD1["prepare"]>["bind"]>;

export async function seedFleet(d1: LocalD1, options: FleetOptions): Promise<void> {
  const now = options.now ?? "2030-01-01T00:00:00.000Z";
  const region = options.region ?? FLEET_REGION;
  const hosts = options.hosts ?? [];

  if (options.accounts) {
    // A user first (the team's owner), then the team (owner_id is a foreign key), then the membership.
    const user = d1.prepare(
      "INSERT INTO users (id, email, name, password_hash, email_verified_at, active_team_id, created_at, updated_at) VALUES (?, ?, ?, 'bench-no-login', ?, ?, ?, ?)",
    );
    await inBatches(d1, options.teams, (k) =>
      user.bind(userIdOf(k), `u${k}@bench.example`, `User ${k}`, now, teamIdOf(k), now, now),
    );
    const team = d1.prepare(
      "INSERT INTO teams (id, name, slug, owner_id, account_type, created_at, updated_at) VALUES (?, ?, ?, ?, 'personal', ?, ?)",
    );
    await inBatches(d1, options.teams, (k) =>
      team.bind(teamIdOf(k), `Team ${k}`, `t-${k}`, userIdOf(k), now, now),
    );
    const member = d1.prepare(
      "INSERT INTO team_members (id, team_id, user_id, role, joined_at) VALUES (?, ?, ?, 'owner', ?)",
    );
    await inBatches(d1, options.teams, (k) => member.bind(`tm_${pad(k)}`, teamIdOf(k), userIdOf(k), now));
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
    const host = d1.prepare(
      `INSERT INTO hosts (id, name, region, ssh_host, ssh_port_min, ssh_port_max, cpu, memory_mb, disk_gb,
        allocated_cpu, allocated_memory_mb, allocated_disk_gb, agent_token_hash, created_at)
       VALUES (?, ?, ?, '127.0.0.1', ?, 65535, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    const { cpu, memoryMb, diskGb } = FLEET_HOST_CAPACITY;
    await inBatches(d1, hosts.length, (h) => {
      const { id, name, tokenHash } = hosts[h] as FleetHost;
      const a = allocated[h] ?? { cpu: 0, memoryMb: 0, diskGb: 0 };
      return host.bind(
        id,
        name,
        region,
        FLEET_SSH_PORT_MIN,
        cpu,
        memoryMb,
        diskGb,
        a.cpu,
        a.memoryMb,
        a.diskGb,
        tokenHash,
        now,
      );
    });
  }

  const insert = d1.prepare(
    "INSERT INTO pods (id, name, team_id, preset, status, plan_slug, region, host_id, ssh_port, created_at, updated_at) VALUES (?, ?, ?, 'static', ?, ?, ?, ?, ?, ?, ?)",
  );
  await inBatches(d1, options.pods, (i) => {
    const pod = fleetPod(i, { ...options, hosts });
    const hostId = pod.host === undefined ? null : (hosts[pod.host]?.id ?? null);
    return insert.bind(
      pod.id,
      pod.name,
      pod.teamId,
      pod.status,
      pod.planSlug,
      region,
      hostId,
      pod.sshPort,
      now,
      now,
    );
  });
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
  const session = d1.prepare(
    "INSERT INTO sessions (id, token_hash, user_id, kind, expires_at, created_at) VALUES (?, ?, ?, 'session', ?, ?)",
  );
  await inBatches(d1, owners.length, (j) =>
    session.bind(
      `ses_bench${pad(j)}`,
      createHash("sha256")
        .update(tokens[j] as string)
        .digest("hex"),
      userIdOf(owners[j] as number),
      expires,
      now.toISOString(),
    ),
  );
  return tokens;
}
