import type { alertChannels, alertDeliveries } from "../../db/schema";

type ChannelRow = typeof alertChannels.$inferSelect;
type DeliveryRow = typeof alertDeliveries.$inferSelect;

export const TEAM_ROLES = ["owner", "member"] as const;

export type TeamRole = (typeof TEAM_ROLES)[number];

const rolesOf = (raw: string | null): TeamRole[] => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw ?? "[]");
  } catch {
    return [];
  }
  return Array.isArray(parsed) ? TEAM_ROLES.filter((r) => parsed.includes(r)) : [];
};

export const toChannelView = (c: ChannelRow) => ({
  id: c.id,
  kind: c.kind,
  name: c.name,
  url: c.url,
  roles: c.kind === "email" ? rolesOf(c.roles) : null,
  enabled: c.enabled,
  created_at: c.createdAt,
  updated_at: c.updatedAt,
});

export const channelRoles = (c: ChannelRow) => rolesOf(c.roles);

export const toDeliveryView = (d: DeliveryRow) => ({
  id: d.id,
  channel_id: d.channelId,
  incident_id: d.incidentId,
  event: d.event,
  state: d.state,
  status: d.status,
  status_code: d.statusCode,
  attempts: d.attempts,
  last_error: d.lastError,
  created_at: d.createdAt,
  delivered_at: d.deliveredAt,
});
