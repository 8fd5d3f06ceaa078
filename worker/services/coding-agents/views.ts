import { CODING_AGENTS, type CodingAgent, findCodingAgent } from "../../../shared/coding-agents";
import type { CodingAgentStatus, PodCodingAgentRow } from "../../db/schema";

/** A catalog entry as `GET /api/agents` shows it (the contract's slug, name, description, and what it installs). */
export interface CatalogAgentView {
  slug: string;
  name: string;
  description: string;
  package: string;
  command: string;
  min_node: number;
}

export const toCatalogView = (a: CodingAgent): CatalogAgentView => ({
  slug: a.slug,
  name: a.name,
  description: a.description,
  package: a.package,
  command: a.command,
  min_node: a.minNodeMajor,
});

export const catalogViews = (): CatalogAgentView[] => CODING_AGENTS.map(toCatalogView);

/** The spec's Agent resource: `{slug, status, error_msg?, installed_at}`, plus what was installed. */
export interface CodingAgentView {
  slug: string;
  status: CodingAgentStatus;
  error_msg?: string;
  installed_at: string;
  /** the installed version ("" until installed) */
  version: string;
  /** the command it puts on the pod's PATH */
  command: string;
  /** the Node major it runs on (null until installed), and whether it is pinned beside the pod's runtime */
  node_major: number | null;
  node_pinned: boolean;
}

export const toCodingAgentView = (row: PodCodingAgentRow): CodingAgentView => ({
  slug: row.slug,
  status: row.status,
  ...(row.status === "error" && row.errorMsg ? { error_msg: row.errorMsg } : {}),
  installed_at: row.installedAt,
  version: row.version ?? "",
  command: findCodingAgent(row.slug)?.command ?? "",
  node_major: row.nodeMajor,
  node_pinned: row.nodePinned ?? false,
});
