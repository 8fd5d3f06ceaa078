import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { randomToken } from "../../../shared/ids";
import { call, registerUser, type TestUser } from "./client";

/** Alerts as the webhook receiver double (test/support/webhook-receiver.ts) recorded them. */
export interface Alert {
  type: string;
  event: string;
  summary: string;
  pod: { id: string; name: string } | null;
  team: { id: string };
  incident: { id: string };
  url: string;
}

const RECEIVER = env.WEBHOOK_RECEIVER_URL;

/** The alerts that reached `path`, oldest first. */
export async function alertsAt(path: string): Promise<Alert[]> {
  const res = await fetch(`${RECEIVER}/__double/received?path=${encodeURIComponent(path)}`);
  const { data } = (await res.json()) as { data: { body: string }[] };
  return data.map((d) => JSON.parse(d.body) as Alert);
}

/** Waits until `count` alerts reached `path` (then a moment more, so a wrong extra one shows). */
export async function expectAlerts(path: string, count: number, settleMs = 300): Promise<Alert[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const got = await alertsAt(path);
    if (got.length >= count || Date.now() > deadline) {
      await new Promise((r) => setTimeout(r, settleMs));
      const settled = await alertsAt(path);
      expect(settled.map((a) => `${a.event}/${a.type}`)).toHaveLength(count);
      return settled;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A new user, their personal team with a webhook channel to a receiver path of its own. */
export async function watchedTeam(name: string): Promise<{ user: TestUser; teamId: string; path: string }> {
  const user = await registerUser(name);
  const teamId = user.user.active_team_id;
  const path = `/hooks/${randomToken(16)}`;
  const res = await call(
    "POST",
    `/api/teams/${teamId}/alerts/channels`,
    { kind: "webhook", name: "ops", url: `${RECEIVER}${path}` },
    { token: user.token },
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { user, teamId, path };
}
