import { createRouter } from "../../http/router";
import { registerCreatePodBackup } from "./create";
import { registerDeletePodBackup } from "./delete";
import { registerDownloadPodBackup } from "./download";
import { registerGetPodBackup } from "./get";
import { registerGetPodBackupSchedule } from "./get-schedule";
import { registerImportPodBackup } from "./import";
import { registerListPodBackups } from "./list";
import { registerRestorePodBackup } from "./restore";
import { registerUpdatePodBackupSchedule } from "./update-schedule";

/**
 * Backups (docs/backups.md), mounted at /api: a pod's backups, its schedule, import and restore under
 * /api/pods/{name}/backups. One file per operation. `schedule` and `import` are registered before
 * `{id}`: the first matching route answers (a backup id is never either word).
 */
export const backupsRouter = createRouter();

registerListPodBackups(backupsRouter);
registerCreatePodBackup(backupsRouter);
registerGetPodBackupSchedule(backupsRouter);
registerUpdatePodBackupSchedule(backupsRouter);
registerImportPodBackup(backupsRouter);
registerGetPodBackup(backupsRouter);
registerDeletePodBackup(backupsRouter);
registerDownloadPodBackup(backupsRouter);
registerRestorePodBackup(backupsRouter);
