import { z } from "@hono/zod-openapi";
import { ALERT_EVENTS, type AlertEvent } from "../../db/schema";
import type { Bindings } from "../../env";

/**
 * The events that alert (docs/alerts.md), in one place: the API's enum (`AlertEventName`) and what
 * each is about. A `pod` event opens one incident per pod and is switched per team and per pod; a
 * `team` event (billing) opens one per team and is switched for the team only.
 */
export const AlertEventName = z.enum(ALERT_EVENTS).openapi("AlertEventName", {
  description:
    "deploy_failed, backup_failed (or its verification), service_failed (a database service), pod_error, " +
    "app_unhealthy (crash-looping or not answering for a while), disk_full (≥ 90 % of the plan), " +
    "payment_failed, team_suspended, host_lost (the pod's server is unreachable)",
});

export const TEAM_EVENTS: readonly AlertEvent[] = ["payment_failed", "team_suspended"];

export const isTeamEvent = (event: AlertEvent) => TEAM_EVENTS.includes(event);

/** Disk: an incident opens at 90 % of the plan's disk and closes below 85 % (no flapping in between). */
export const DISK_FIRE_RATIO = 0.9;
export const DISK_RESOLVE_RATIO = 0.85;

const DEFAULT_UNHEALTHY_AFTER_S = 300;
const DEFAULT_HOST_LOST_AFTER_S = 60;
const MAX_WAIT_S = 86_400;

const seconds = (raw: string | undefined, fallback: number) => {
  const n = raw === undefined || raw.trim() === "" ? Number.NaN : Number(raw);
  return Number.isInteger(n) && n >= 0 && n <= MAX_WAIT_S ? n : fallback;
};

/** How long an app stays diagnosed unhealthy before it alerts (`ALERT_UNHEALTHY_AFTER_S`, 5 min). */
export const unhealthyAfterMs = (env: Pick<Bindings, "ALERT_UNHEALTHY_AFTER_S">) =>
  seconds(env.ALERT_UNHEALTHY_AFTER_S, DEFAULT_UNHEALTHY_AFTER_S) * 1000;

/** How long a host's agent stays disconnected before its pods' teams hear (`ALERT_HOST_LOST_AFTER_S`, 60 s). */
export const hostLostAfterMs = (env: Pick<Bindings, "ALERT_HOST_LOST_AFTER_S">) =>
  seconds(env.ALERT_HOST_LOST_AFTER_S, DEFAULT_HOST_LOST_AFTER_S) * 1000;
