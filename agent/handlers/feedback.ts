import { LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT, podNames } from "../docker/naming";
import { containerIp, inspectContainer } from "../docker/resources";
import { AgentError } from "../errors";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * Visitor feedback (docs/feedback.md): the pod's widget settings are remembered in the state dir
 * (Ingress.setFeedback) and every render of its vhost injects the widget accordingly. Unlike custom
 * domains, a change must show at once: the pod's vhost is rendered again now, and when it cannot
 * be (the pod is not running, so it has no address; nginx refuses the result) the previous
 * settings are put back and the call fails, so the host keeps serving what it served before.
 * Under the pod's lock, like every other change of the pod.
 */
export function feedbackHandlers(
  deps: HandlerDeps,
  locks: KeyedLock,
): Pick<HandlerTable, "pod.feedback.set"> {
  return {
    "pod.feedback.set": guard("pod.feedback.set", ({ name, feedback }) =>
      locks.run(name, async () => {
        const n = podNames(deps.config.namePrefix, name);
        const info = await inspectContainer(deps.docker, n.container);
        const labels = info?.Config.Labels ?? {};
        const ip = info?.State.Running ? containerIp(info, n.network) : null;
        const podId = labels[LABEL_POD_ID];
        const domain = labels[LABEL_DOMAIN];
        const port = Number(labels[LABEL_PORT]);
        if (!info) throw new AgentError("not_found", `pod ${name} has no container on this host`);
        if (!ip || !podId || !domain || !port)
          throw new AgentError(
            "internal",
            `pod ${name} is not running: its web configuration cannot be rendered, so the feedback settings were not changed; start the pod first`,
          );
        const previous = await deps.ingress.feedback(name);
        await deps.ingress.setFeedback(name, feedback);
        try {
          await deps.ingress.upsert({ pod: name, podId, domains: [domain], ip, port });
        } catch (error) {
          await deps.ingress.setFeedback(name, previous);
          throw error;
        }
        return { rendered: true as const };
      }),
    ),
  };
}
