import { createRouter } from "../../http/router";
import { registerClonePod } from "./clone";
import { registerCreatePod } from "./create";
import { registerDeletePod } from "./delete";
import { registerListPodEvents } from "./events";
import { registerGetPod } from "./get";
import { registerListPods } from "./list";
import { registerPowerPod } from "./power";
import { registerResizePod } from "./resize";

/**
 * The pods themselves, mounted at /api/pods, one file per operation (power.ts makes start, stop and
 * restart); a pod's other capabilities have their own routers beside this one (worker/app.ts).
 *
 * The order below is the order of the OpenAPI document's paths.
 */
export const podsRouter = createRouter();

registerCreatePod(podsRouter);
registerListPods(podsRouter);
registerGetPod(podsRouter);
registerDeletePod(podsRouter);
registerPowerPod(podsRouter, "start");
registerPowerPod(podsRouter, "stop");
registerPowerPod(podsRouter, "restart");
registerResizePod(podsRouter);
registerClonePod(podsRouter);
registerListPodEvents(podsRouter);
