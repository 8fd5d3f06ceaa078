import { z } from "zod";
import { AGENT_VERSION_MAX, CODING_AGENT_SLUGS, isAgentVersion, isExactAgentVersion } from "../coding-agents";
import { lazy } from "./lazy";
import { PodName } from "./pod-name";

/**
 * Coding agents in pods (docs/coding-agents.md). The Worker keeps the records; the host fetches the
 * catalog agent's package tree from the npm registry on the host itself (no package code runs
 * there), keeps it per package version, and installs it as pod_user into the pod's own npm prefix
 * (`~/.npm-global`), where the package's install scripts run with the pod's Node, offline. The
 * agent's sign-in happens later inside the pod, by the user: nothing here carries a credential.
 * Spread into `ops` in ./ops.ts.
 */

export const CodingAgentSlug = lazy(() => z.enum(CODING_AGENT_SLUGS));

/** an exact version or a dist-tag (shared/coding-agents.ts) */
export const AgentVersion = lazy(() =>
  z
    .string()
    .max(AGENT_VERSION_MAX)
    .refine(isAgentVersion, "must be an exact version (1.2.3) or a dist-tag (latest)"),
);

export const codingAgentsOps = {
  /**
   * install catalog agent `agent` at `version` (the dist-tag resolved on the host) into the running
   * pod; idempotent per pod and agent: a retry puts the same tree in place again. `nodeMajor` is the
   * Node the agent runs on: the pod's own when it is a Node.js pod on a new enough major, else one
   * the image carries beside its runtime (`pinned`: the command is a wrapper that puts it first on
   * PATH).
   */
  "pod.coding-agents.install": () => ({
    params: z.object({ name: PodName, agent: CodingAgentSlug(), version: AgentVersion() }),
    result: z.object({
      version: z.string().refine(isExactAgentVersion),
      command: z.string().min(1).max(64),
      nodeMajor: z.number().int().positive(),
      pinned: z.boolean(),
    }),
  }),
  /**
   * the agent's package and command removed from the pod's npm prefix (what the user's sign-in wrote
   * in its own config directory stays: it is theirs); an absent one is removed
   */
  "pod.coding-agents.remove": () => ({
    params: z.object({ name: PodName, agent: CodingAgentSlug() }),
    result: z.object({ removed: z.literal(true) }),
  }),
};
