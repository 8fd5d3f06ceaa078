import { agentNode, buildAgent } from "../../scripts/build-agent";

/**
 * The node tests' global setup: end-to-end tests start the agent as production does, from its
 * compiled bundle (scripts/build-agent.ts), built here once per run from the sources under test, on
 * the agent's own Node (22 LTS or later), installed here when missing (scripts/host/ensure-agent-node.sh).
 */
export default async function setup() {
  agentNode();
  await buildAgent();
}
