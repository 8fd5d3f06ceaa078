import { createRouter } from "../../http/router";
import { registerAddPodDomain } from "./add";
import { registerListPodDomains } from "./list";
import { registerRemovePodDomain } from "./remove";
import { registerVerifyPodDomain } from "./verify";

/**
 * Custom domains (docs/domains.md), mounted at /api/pods: a pod's domains under
 * /api/pods/{name}/domains. One file per operation; the order below is the OpenAPI document's.
 */
export const domainsRouter = createRouter();

registerListPodDomains(domainsRouter);
registerAddPodDomain(domainsRouter);
registerRemovePodDomain(domainsRouter);
registerVerifyPodDomain(domainsRouter);
