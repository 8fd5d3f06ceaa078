import type { TestProject } from "vitest/node";
import { startRepohostDouble } from "../support/repohost";

/**
 * Starts the git host's REST double (test/support/repohost.ts) for the workerd tests; its address
 * becomes the Worker's GITHUB_API_BASE (vitest.config.ts reads it from the environment).
 */
export default async function setup(_project: TestProject) {
  const double = await startRepohostDouble();
  process.env.REPOHOST_DOUBLE_URL = double.url;
  return () => double.close();
}
