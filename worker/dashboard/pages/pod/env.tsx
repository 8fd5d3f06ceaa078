import { ENV_FILE } from "../../../../shared/protocol/inside";
import type { PodView } from "../../../services/pods/view";
import { Curl } from "../../components/curl";
import { DataTable } from "../../components/data-table";
import { PodPage } from "../../components/pod-page";
import type { PageContext } from "../../layout";

export interface EnvData {
  pod: PodView;
  /** the file's variable names (never their values: those come from the API on "Reveal") */
  keys: { ok: true; path: string; names: string[] } | { ok: false; error: string };
}

/**
 * The Environment tab. The server renders the names only; env.client.js fetches the values from
 * `GET /api/pods/{name}/env` when the user asks ("Reveal"), shows a diff of what a save changes,
 * and saves with `PUT` (set) and `DELETE` (unset) of the same API, then `POST …/restart` when asked.
 */
export function EnvPage({ page, data }: { page: PageContext; data: EnvData }) {
  const { pod, keys } = data;
  const api = `/api/pods/${encodeURIComponent(pod.name)}`;
  const restartsApp = pod.preset === "nodejs" || pod.preset === "python";
  return (
    <PodPage page={page} pod={pod} tab="env" scripts={["env.js"]}>
      <h2>Environment variables</h2>
      <p class="muted">
        The app's <code>{keys.ok ? keys.path : ENV_FILE}</code>.{" "}
        {restartsApp
          ? "Saving restarts the app so it reads the new values."
          : "A static or PHP pod has no app process to restart: PHP reads the file itself; “Save and restart” restarts the whole pod."}
      </p>
      {keys.ok ? (
        <section
          class="card env-editor"
          data-env={`${api}/env`}
          data-restart={`${api}/restart`}
          data-keys={JSON.stringify(keys.names)}
          aria-labelledby="env-h"
        >
          <div class="env-bar">
            <h3 id="env-h" class="visually-hidden">
              Variables
            </h3>
            <fieldset class="actions plain">
              <legend class="visually-hidden">Editor</legend>
              <button type="button" data-env-mode="table" aria-pressed="true">
                Table
              </button>
              <button type="button" data-env-mode="raw" aria-pressed="false">
                Raw .env
              </button>
            </fieldset>
            <button type="button" data-env-reveal>
              Reveal values
            </button>
          </div>
          <div data-env-table-box>
            <DataTable
              label="Environment variables"
              columns={["Name", "Value", { hidden: "Remove" }]}
              class="env-table"
            >
              <tbody data-env-rows>
                {keys.names.map((name) => (
                  <tr data-env-row data-original={name}>
                    <td>
                      <input
                        aria-label="Variable name"
                        class="env-key"
                        value={name}
                        readonly
                        data-env-key
                        autocomplete="off"
                      />
                    </td>
                    <td>
                      <input
                        aria-label={`Value of ${name}`}
                        class="env-value"
                        type="password"
                        value=""
                        placeholder="hidden: Reveal values to see or change it"
                        disabled
                        data-env-value
                        autocomplete="off"
                      />
                    </td>
                    <td>
                      <button type="button" class="small" data-env-remove aria-label={`Remove ${name}`}>
                        Remove
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </DataTable>
            {keys.names.length === 0 ? (
              <p class="muted" data-env-empty>
                No variables yet.
              </p>
            ) : null}
            <button type="button" data-env-add>
              Add variable
            </button>
          </div>
          <div data-env-raw-box hidden>
            <label>
              The .env file's variables (<code>NAME=value</code>, one per line; <code>#</code> starts a
              comment)
              <textarea data-env-raw rows={14} spellcheck={false} />
            </label>
          </div>
          <div class="actions env-save">
            <button type="button" data-env-review>
              Review changes
            </button>
          </div>
          <section class="env-diff" data-env-diff-box hidden aria-labelledby="diff-h">
            <h3 id="diff-h">What will change</h3>
            <pre data-env-diff />
            <div class="actions">
              <button type="button" class="primary" data-env-save="save">
                Save
              </button>
              <button type="button" data-env-save="restart">
                Save and restart the pod
              </button>
            </div>
          </section>
          <p class="form-error" role="alert" data-env-error hidden />
          <p class="form-ok" role="status" data-env-status hidden />
        </section>
      ) : (
        <p class="form-error" role="alert">
          The variables cannot be read now: {keys.error}
        </p>
      )}
      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `${api}/env`, note: "Read the variables (with their values)" },
          {
            method: "PUT",
            path: `${api}/env`,
            body: { vars: { API_URL: "https://api.example.com" } },
            note: "Set (merged into the file)",
          },
          { method: "DELETE", path: `${api}/env`, body: { keys: ["API_URL"] }, note: "Remove" },
          { method: "POST", path: `${api}/restart`, note: "Restart the pod" },
        ]}
      />
    </PodPage>
  );
}
