import { createRouter } from "../../http/router";
import { registerGetPodServiceCredentials } from "./credentials";
import { registerInstallPodService } from "./install";
import { registerListPodServices } from "./list";
import { registerRemovePodService } from "./remove";

/**
 * Database services (docs/services.md), mounted at /api/pods: a pod's services under
 * /api/pods/{name}/services. One file per operation; the order below is the OpenAPI document's.
 */
export const servicesRouter = createRouter();

registerListPodServices(servicesRouter);
registerInstallPodService(servicesRouter);
registerRemovePodService(servicesRouter);
registerGetPodServiceCredentials(servicesRouter);
