import { LABEL_DOMAIN, LABEL_POD_ID, LABEL_PORT, podNames } from "../docker/naming";
import { containerIp, inspectContainer } from "../docker/resources";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

/**
 * Custom domains (docs/domains.md): the pod's verified domains are remembered in the state dir
 * (Ingress.setCustomDomains) and every render of its vhost serves them beside `{name}.{POD_DOMAIN}`.
 * A running pod's vhost is rendered again at once; a stopped one gets them at its next start. The
 * names were checked by the protocol's schema and are checked again by the ingress before nginx
 * sees them. Under the pod's lock, like every other change of the pod.
 */
export function domainHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, "pod.domains.set"> {
  return {
    "pod.domains.set": guard("pod.domains.set", ({ name, domains }) =>
      locks.run(name, async () => {
        const unique = [...new Set(domains)];
        const previous = await deps.ingress.customDomains(name);
        await deps.ingress.setCustomDomains(name, unique);
        const n = podNames(deps.config.namePrefix, name);
        const info = await inspectContainer(deps.docker, n.container);
        const labels = info?.Config.Labels ?? {};
        const ip = info?.State.Running ? containerIp(info, n.network) : null;
        const podId = labels[LABEL_POD_ID];
        const domain = labels[LABEL_DOMAIN];
        const port = Number(labels[LABEL_PORT]);
        try {
          if (ip && podId && domain && port)
            await deps.ingress.upsert({ pod: name, podId, domains: [domain], ip, port });
        } catch (err) {
          // e.g. a state dir with room for the list but not the vhost: the Worker keeps the domain
          // pending, so the list goes back too, or the pod's next render would serve it unverified
          await deps.ingress.setCustomDomains(name, previous).catch(() => undefined);
          throw err;
        }
        return { domains: unique };
      }),
    ),
  };
}
