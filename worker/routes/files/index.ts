import { createRouter } from "../../http/router";
import { registerCopyPodPath } from "./copy";
import { registerCreatePodFolder } from "./create-folder";
import { registerDeletePodPath } from "./delete";
import { registerDownloadPodFile } from "./download";
import { registerListPodFiles } from "./list";
import { registerReadPodFile } from "./read";
import { registerRenamePodPath } from "./rename";
import { registerUploadPodFile } from "./upload";
import { registerWritePodFile } from "./write";

/**
 * The Files endpoints, mounted at /api/pods beside the pods router, one file per operation. Everything
 * runs as pod_user in the running pod (a stopped pod is 400); file bytes stream through a
 * TransferRelay, never through the host's Durable Object (see services/files/transfer.ts).
 *
 * The order below is the order of the OpenAPI document's paths.
 */
export const filesRouter = createRouter();

registerListPodFiles(filesRouter);
registerReadPodFile(filesRouter);
registerWritePodFile(filesRouter);
registerUploadPodFile(filesRouter);
registerDownloadPodFile(filesRouter);
registerDeletePodPath(filesRouter);
registerRenamePodPath(filesRouter);
registerCopyPodPath(filesRouter);
registerCreatePodFolder(filesRouter);
