import { type CodingAgent, findCodingAgent } from "../../shared/coding-agents";
import { runningContainer } from "../backups/pod-run";
import { CodingAgentCache } from "../coding-agents/host-cache";
import {
  chooseNode,
  installIntoPod,
  minimumNodeMajor,
  podNodeFacts,
  removeFromPod,
} from "../coding-agents/pod-install";
import { roomMaker } from "../disk/host-cache";
import { AgentError } from "../errors";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

type CodingAgentOps = "pod.coding-agents.install" | "pod.coding-agents.remove";

/**
 * Coding agents (docs/coding-agents.md, agent/coding-agents/). The registry fetch runs outside the
 * pod's lock (it can take minutes, and pods share its result); the steps inside the pod run under
 * it, so an install, a removal and the pod's start/stop/delete never interleave.
 */
export function codingAgentHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, CodingAgentOps> {
  const { docker, config } = deps;
  const cache = new CodingAgentCache(config.cacheDir, config.codingAgents, roomMaker(config, locks));
  const streams = podStreams(deps);

  const container = async (pod: string) => {
    const name = await runningContainer(docker, config.namePrefix, pod);
    if (!name) throw new AgentError("bad_request", "pod is not running; start it first");
    return name;
  };
  const catalogAgent = (slug: string): CodingAgent => {
    const agent = findCodingAgent(slug);
    if (!agent) throw new AgentError("bad_request", `unknown coding agent ${slug}`);
    return agent;
  };

  return {
    "pod.coding-agents.install": guard("pod.coding-agents.install", async (p, ctx) => {
      const agent = catalogAgent(p.agent);
      await container(p.name);
      return cache.withTree(agent.package, p.version, ctx.signal, (tree) =>
        locks.run(p.name, async () => {
          const box = await container(p.name);
          const node = chooseNode(
            await podNodeFacts(docker, box),
            await minimumNodeMajor(agent, tree.enginesNode),
          );
          await installIntoPod({ docker, streams }, box, agent, tree, node, ctx.signal);
          return {
            version: tree.version,
            command: agent.command,
            nodeMajor: node.major,
            pinned: node.pinned,
          };
        }),
      );
    }),
    "pod.coding-agents.remove": guard("pod.coding-agents.remove", (p) =>
      locks.run(p.name, async () => {
        await removeFromPod(docker, await container(p.name), catalogAgent(p.agent));
        return { removed: true as const };
      }),
    ),
  };
}
