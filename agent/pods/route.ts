import type { ContainerInspectInfo } from "dockerode";
import { LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT } from "../docker/naming";
import { waitForPort } from "../docker/wait-port";
import type { HandlerDeps } from "../handlers/deps";

/** how long a start waits for the pod's web server before reporting running anyway */
const WEB_READY_TIMEOUT_MS = 15_000;

/** Point the pod's vhost at its current address (domain and port are labels of the container). */
export async function routeTo(
  deps: Pick<HandlerDeps, "ingress" | "log">,
  pod: string,
  info: ContainerInspectInfo,
  ip: string,
  signal?: AbortSignal,
): Promise<void> {
  const labels = info.Config.Labels ?? {};
  const domain = labels[LABEL_DOMAIN];
  const port = Number(labels[LABEL_PORT]);
  const podId = labels[LABEL_POD_ID];
  if (!domain || !port || !podId) {
    deps.log.warn("container lacks ingress labels; vhost not rendered", { pod });
    return;
  }
  // "running" should mean the page answers: wait (bounded) for the pod's web server to listen,
  // while the ingress takes the route (the two are independent; a reload takes longer than a
  // preset's boot).
  const [, listening] = await Promise.all([
    deps.ingress.upsert({ pod, podId, domains: [domain], ip, port }),
    waitForPort(ip, port, WEB_READY_TIMEOUT_MS, signal),
  ]);
  if (!listening) {
    deps.log.warn("pod is running but nothing listens on its web port yet", { pod, port });
  }
}
