/**
 * bench/scale's fleets: each size seeded in a local D1 of its own (bench/support/fleet.ts), with its
 * signed-in owners; and a table's rows counted in the running Worker's D1 file.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type FleetHost, seedFleet, seedSessions } from "../support/fleet";
import { applyMigrations, openLocalD1 } from "../support/worker";
import { now, run, USERS, undo } from "./settings";

export interface Size {
  label: string;
  pods: number;
  teams: number;
}

export interface Host extends FleetHost {
  token: string;
}

export interface Seeded {
  dir: string;
  /** Bearer tokens of the signed-in owners */
  tokens: string[];
  seedMs: number;
}

export async function seed(size: Size, hosts: readonly Host[]): Promise<Seeded> {
  const t0 = now();
  const dir = await mkdtemp(path.join(tmpdir(), `podhost-scale-${size.pods}-`));
  undo.add(() => rm(dir, { recursive: true, force: true }));
  await applyMigrations(dir);
  const { d1, dispose } = await openLocalD1(dir);
  try {
    await seedFleet(d1, { pods: size.pods, teams: size.teams, hosts, accounts: true });
    // The signed-in owners spread over the teams (every team has PODS_PER_TEAM pods).
    const owners = Array.from({ length: Math.min(USERS, size.teams) }, (_, j) =>
      Math.floor((j * size.teams) / Math.min(USERS, size.teams)),
    );
    const tokens = await seedSessions(d1, owners);
    return { dir, tokens, seedMs: now() - t0 };
  } finally {
    await dispose();
  }
}

/** Rows of a table in the Worker's D1 file, read by the sqlite3 CLI (read-only) while the Worker runs. */
export async function countRows(persistDir: string, table: string): Promise<number> {
  const dir = path.join(persistDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = (await readdir(dir)).find((f) => f.endsWith(".sqlite"));
  if (!file) throw new Error(`no D1 database file in ${dir}`);
  const { stdout } = await run("sqlite3", [
    "-readonly",
    "-cmd",
    ".timeout 5000",
    path.join(dir, file),
    `SELECT count(*) FROM ${table}`,
  ]);
  return Number(stdout.trim());
}
