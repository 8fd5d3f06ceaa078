import { fail, ok, type Result } from "../../../shared/errors";
import { insertBackup } from "../../services/backups/create";
import { checkUpload } from "../../services/backups/job";
import { runOnHost } from "../host-step";
import { CREATE_TIMEOUT_MS as BACKUP_TIMEOUT_MS } from "../pod-backup";
import { dbOf, type MoveRun, type Placed, type Progress } from "./run";

export interface MoveBackup {
  id: string;
  bytes: number;
  sha256: string;
  createdAt: string;
}

/** The databases of a stopped pod, dumped into a backup made for the move (`manual`, noted so). */
export async function saveDatabases(
  run: MoveRun,
  progress: Progress,
  placed: Placed,
): Promise<Result<MoveBackup>> {
  const { step, env, ref, job } = run;
  const row = await step.do("record the move's backup", async () => {
    const inserted = await insertBackup(
      dbOf(run),
      { id: job.podId, name: job.podName },
      { trigger: "manual", note: `made to move the pod to server ${placed.hostName}` },
    );
    return inserted.ok
      ? { ok: true as const, id: inserted.value.id, createdAt: inserted.value.createdAt }
      : { ok: false as const, reason: inserted.message };
  });
  if (!row.ok) return fail("conflict", `the databases could not be saved for the move: ${row.reason}`);
  progress.backupId = row.id;
  const made = await runOnHost(step, env, ref, {
    name: "dump the databases",
    hostId: job.fromHostId,
    op: "backup.create",
    params: { name: job.podName, backupId: row.id, preset: job.preset, whenStopped: "helper" },
    timeoutMs: BACKUP_TIMEOUT_MS,
  });
  const facts = await step.do("check the dump", async () => checkUpload(env, dbOf(run), row.id, made));
  if (!facts.ok) return fail("internal", `the databases could not be saved for the move: ${facts.reason}`);
  return ok({ id: row.id, bytes: facts.bytes, sha256: facts.sha256, createdAt: row.createdAt });
}
