import type { BackupList } from "../../../services/backups/manage";
import type { ScheduleView } from "../../../services/backups/schedule";
import type { BackupView } from "../../../services/backups/views";
import type { PodView } from "../../../services/pods/view";
import { ApiForm } from "../../components/api-form";
import { Curl, type CurlCall } from "../../components/curl";
import { DataTable, EmptyRow } from "../../components/data-table";
import { StatusBadge, Time } from "../../components/pod-bits";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";
import { humanBytes } from "./bits";

const api = (pod: Pick<PodView, "name">) => `/api/pods/${pod.name}/backups`;

/** What a restore replaces, said in its confirmation (docs/backups.md "Restore"). */
const restoreWarning = (pod: Pick<PodView, "name">, b: BackupView) =>
  `Restore pod ${pod.name} from the backup of ${b.created_at.replace("T", " ").slice(0, 16)} UTC` +
  `${b.note ? ` ("${b.note}")` : ""}? This REPLACES the pod's app files (/home/pod_user/app) and ` +
  "the contents of its databases with the backup's; whatever changed since is lost. The app's services " +
  "stop while it runs.";

function Verification({ b }: { b: BackupView }) {
  if (b.verified_at)
    return (
      <span>
        <span class="badge status-verified">verified</span> <Time iso={b.verified_at} />
      </span>
    );
  if (b.verify_error)
    return (
      <span>
        <span class="badge status-failed">test-restore failed</span>{" "}
        <span class="failure">{b.verify_error}</span>
      </span>
    );
  return <span class="muted">{b.status === "in_progress" ? "pending" : "not verified"}</span>;
}

/** The backups' rows, also served alone for htmx: polled every 2 s while one is in progress. */
export function BackupRows({ pod, backups }: { pod: Pick<PodView, "name">; backups: BackupView[] }) {
  const busy = backups.some((b) => b.status === "in_progress");
  return (
    <tbody
      id="backup-rows"
      hx-get={`${podPath(pod.name, "backups")}/rows`}
      hx-trigger={busy ? "every 2s, refresh" : "refresh"}
      hx-swap="outerHTML"
    >
      {backups.length === 0 ? (
        <EmptyRow span={7}>No backups yet.</EmptyRow>
      ) : (
        backups.map((b) => (
          <tr>
            <td>
              <Time iso={b.created_at} />
            </td>
            <td class="note">{b.note ?? <span class="muted">—</span>}</td>
            <td>{b.trigger}</td>
            <td>
              <StatusBadge status={b.status} />
              {b.error ? <span class="failure">{b.error}</span> : null}
            </td>
            <td>{humanBytes(b.size)}</td>
            <td>
              <Verification b={b} />
            </td>
            <td>
              <div class="actions">
                {b.status === "completed" ? (
                  <>
                    <a class="button small" href={`${api(pod)}/${b.id}/download`} download>
                      Download
                    </a>
                    <ApiForm
                      action={`${api(pod)}/${b.id}/restore`}
                      confirm={restoreWarning(pod, b)}
                      then="stay"
                      success="Restoring: the pod's Events tab says when it is done."
                    >
                      <button type="submit" class="small">
                        Restore
                      </button>
                    </ApiForm>
                  </>
                ) : null}
                {b.status !== "in_progress" ? (
                  <ApiForm
                    action={`${api(pod)}/${b.id}`}
                    method="DELETE"
                    confirm={`Delete the backup of ${b.created_at.replace("T", " ").slice(0, 16)} UTC from pod ${pod.name}? Its archive is gone for good.`}
                  >
                    <button type="submit" class="small danger">
                      Delete
                    </button>
                  </ApiForm>
                ) : null}
              </div>
            </td>
          </tr>
        ))
      )}
    </tbody>
  );
}

export function BackupsPage({
  page,
  pod,
  list,
  schedule,
}: {
  page: PageContext;
  pod: PodView;
  list: BackupList;
  schedule: ScheduleView;
}) {
  const path = api(pod);
  const calls: CurlCall[] = [
    { method: "GET", path, note: "The backups, with the plan's limit" },
    { method: "POST", path, body: { note: "before the upgrade" }, note: "Back up now" },
    { method: "POST", path: `${path}/bk_…/restore`, note: "Restore one" },
    { method: "GET", path: `${path}/bk_…/download`, note: "Download one (add -o backup.tar.gz)" },
    {
      method: "PUT",
      path: `${path}/schedule`,
      body: { enabled: true, frequency: "daily" },
      note: "The schedule",
    },
  ];
  return (
    <PodPage page={page} pod={pod} tab="backups" scripts={["pod-data.js"]}>
      <p class="muted">
        {list.count} of {list.limit} kept (the {pod.plan_slug} plan's limit). A backup holds the app's files
        and a dump of every database; it is completed once a test-restore of it passed.
      </p>
      <div class="grid">
        <ApiForm action={path} then="reload" class="card">
          <h2>Back up now</h2>
          <label>
            Note (optional)
            <input name="note" maxlength={500} placeholder="before the upgrade" data-optional />
          </label>
          <button type="submit" class="primary">
            Back up now
          </button>
        </ApiForm>
        <form class="card" data-upload={`${path}/import`}>
          <h2>Import an archive</h2>
          <label>
            Backup archive (.tar.gz, at most 2 GB)
            <input name="file" type="file" accept=".tar.gz,.tgz,application/gzip" required />
          </label>
          <label>
            Note (optional)
            <input name="note" maxlength={500} />
          </label>
          <progress hidden value={0} max={1} aria-label="Upload progress" />
          <p class="muted" role="status" data-upload-status hidden />
          <p class="form-error" role="alert" data-upload-error hidden />
          <button type="submit">Upload and import</button>
        </form>
        <ApiForm action={`${path}/schedule`} method="PUT" then="reload" class="card" success="Saved.">
          <h2>Schedule</h2>
          <label>
            <input name="enabled" type="checkbox" checked={schedule.enabled} /> Back up on a schedule
          </label>
          <label>
            How often
            <select name="frequency">
              <option value="daily" selected={schedule.frequency === "daily"}>
                Daily
              </option>
              <option value="weekly" selected={schedule.frequency === "weekly"}>
                Weekly
              </option>
            </select>
          </label>
          <label>
            Backups to keep (at most {list.limit})
            <input
              name="retention"
              type="number"
              min={1}
              max={list.limit}
              value={String(schedule.retention)}
            />
          </label>
          <p class="muted">
            Next: {schedule.next_run_at ? <Time iso={schedule.next_run_at} /> : "none (the schedule is off)"}
          </p>
          <button type="submit">Save schedule</button>
        </ApiForm>
      </div>
      <h2>Backups</h2>
      <DataTable
        label="Backups"
        columns={["Made", "Note", "Trigger", "Status", "Size", "Verification", { hidden: "Actions" }]}
        class="backups"
      >
        <BackupRows pod={pod} backups={list.backups} />
      </DataTable>
      <Curl base={page.base} calls={calls} />
    </PodPage>
  );
}
