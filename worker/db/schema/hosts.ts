import { integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Container hosts. Capacity is what the operator registered (overcommit is their call); `allocated_*`
 * is the sum of the plans of the host's live pods, moved only by conditional UPDATEs so two
 * placements racing for the last room cannot both win.
 */
export const hosts = sqliteTable("hosts", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  region: text("region").notNull(),
  /** the public SSH host name users connect to */
  sshHost: text("ssh_host").notNull(),
  sshPortMin: integer("ssh_port_min").notNull(),
  sshPortMax: integer("ssh_port_max").notNull(),
  cpu: real("cpu").notNull(),
  memoryMb: integer("memory_mb").notNull(),
  diskGb: integer("disk_gb").notNull(),
  allocatedCpu: real("allocated_cpu").notNull().default(0),
  allocatedMemoryMb: integer("allocated_memory_mb").notNull().default(0),
  allocatedDiskGb: integer("allocated_disk_gb").notNull().default(0),
  status: text("status", { enum: ["online", "offline"] })
    .notNull()
    .default("offline"),
  /**
   * Why the host cannot serve pods right now, as its agent reports it (its ingress did not start);
   * null when it can. A host with a problem takes no new pods until its agent says it recovered.
   */
  problem: text("problem"),
  /** set by an operator (`npm run host:drain`): no new pods are placed here; its pods keep running */
  drained: integer("drained", { mode: "boolean" }).notNull().default(false),
  agentTokenHash: text("agent_token_hash").notNull().unique(),
  /**
   * Where the edge router reaches this host's ingress (docs/edge.md): in production the host's tunnel
   * or public address, locally `http://127.0.0.1:<ingress port>`. Registered with the host
   * (`npm run host:add -- --ingress-origin`); null: its pods cannot be reached through the edge (503).
   */
  ingressOrigin: text("ingress_origin"),
  agentVersion: text("agent_version"),
  lastSeenAt: text("last_seen_at"),
  createdAt: text("created_at").notNull(),
});

export type HostRow = typeof hosts.$inferSelect;
