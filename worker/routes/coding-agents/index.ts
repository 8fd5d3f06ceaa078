import { createRouter } from "../../http/router";
import { registerListAgentCatalog } from "./catalog";
import { registerInstallPodAgent } from "./install";
import { registerListPodAgents } from "./list";
import { registerRemovePodAgent } from "./remove";

/**
 * Coding agents (docs/coding-agents.md), mounted at /api: the catalog at /api/agents, a pod's agents
 * under /api/pods/{name}/agents. One file per operation; the order below is the OpenAPI document's.
 */
export const codingAgentsRouter = createRouter();

registerListAgentCatalog(codingAgentsRouter);
registerListPodAgents(codingAgentsRouter);
registerInstallPodAgent(codingAgentsRouter);
registerRemovePodAgent(codingAgentsRouter);
