import { ok, type Result } from "../../../shared/errors";
import { type CatalogAgentView, catalogViews } from "./views";

/** `GET /api/agents`: the catalog (shared/coding-agents.ts), in its order. */
export function listAgentCatalog(): Result<{ agents: CatalogAgentView[] }> {
  return ok({ agents: catalogViews() });
}
