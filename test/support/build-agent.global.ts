import { buildAgent } from "../../scripts/build-agent";

/**
 * The node tests' global setup: end-to-end tests start the agent as production does, from its
 * compiled bundle (scripts/build-agent.ts), built here once per run from the sources under test.
 */
export default async function setup() {
  await buildAgent();
}
