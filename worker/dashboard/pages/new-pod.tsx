import { IMPORT_BODY_MAX_BYTES, ZIP_UPLOAD_MAX_BYTES } from "../../../shared/limits";
import type { listPlans, listPresets, listRegions } from "../../services/catalog/catalog";
import type { EventView } from "../../services/pods/events";
import type { PodView } from "../../services/pods/view";
import { Curl } from "../components/curl";
import { DataTable } from "../components/data-table";
import { podUrl, StatusBadge, Time } from "../components/pod-bits";
import { podPath } from "../components/pod-page";
import { Page, type PageContext } from "../layout";
import { monthly } from "./pods-list";

export const SOURCES = [
  ["empty", "An empty pod", "Pick a preset; put your app in later (SSH, files, git)."],
  ["zip", "A ZIP archive", "Your site or app packed as a .zip: package.json or index.html at its top."],
  ["repo", "A git repository", "Cloned and deployed on every push to the branch you pick."],
  ["import", "An import", "A page or an assistant's shared artifact by URL, or pasted code."],
] as const;
export type Source = (typeof SOURCES)[number][0];

export interface NewPodCatalog {
  plans: ReturnType<typeof listPlans>;
  presets: ReturnType<typeof listPresets>;
  regions: Awaited<ReturnType<typeof listRegions>>;
}

/** The pod name rule of the API (routes/pods/schemas.ts), for the browser's own check before sending. */
const NAME_PATTERN = "[a-z][a-z0-9\\-]{1,38}[a-z0-9]";

function SourcePicker({ source }: { source: Source }) {
  return (
    <fieldset class="sources">
      <legend>Start from</legend>
      {SOURCES.map(([key, label, hint]) => (
        <label class="choice">
          <input type="radio" name="source" value={key} checked={key === source} />
          <span>
            <strong>{label}</strong>
            <span class="muted">{hint}</span>
          </span>
        </label>
      ))}
    </fieldset>
  );
}

function ZipPanel({ hidden }: { hidden: boolean }) {
  return (
    <section class="source-panel" data-source-panel="zip" hidden={hidden}>
      <h2>ZIP archive</h2>
      <div class="drop-zone" data-drop-zone>
        <p>Drop a .zip file here, or pick one.</p>
        <label>
          ZIP file
          <input type="file" accept=".zip,application/zip" data-zip-input />
        </label>
        <p class="muted" data-zip-chosen>
          No file chosen. Up to {ZIP_UPLOAD_MAX_BYTES / 1024 / 1024} MiB; package.json or index.html at its
          top level.
        </p>
      </div>
      <div data-upload-progress hidden>
        <label>
          <span data-upload-label>Uploading</span>
          <progress max={100} value={0} data-upload-bar />
        </label>
        <p role="status" data-upload-status />
      </div>
    </section>
  );
}

function RepoPanel({ hidden }: { hidden: boolean }) {
  return (
    <section class="source-panel" data-source-panel="repo" hidden={hidden}>
      <h2>Git repository</h2>
      <label>
        Repository URL
        <input
          type="url"
          name="repo_url"
          placeholder="https://github.com/you/site.git"
          maxlength={2048}
          data-repo-url
        />
      </label>
      <label>
        Access token <span class="muted">(a private repository only; kept encrypted)</span>
        <input type="password" name="auth_token" autocomplete="off" data-optional maxlength={1024} />
      </label>
      <div class="actions">
        <button type="button" data-load-branches>
          Load branches
        </button>
      </div>
      <label>
        Branch
        <select name="branch" data-branch disabled>
          <option value="">Load the branches first</option>
        </select>
      </label>
      <p class="form-error" role="alert" data-repo-error hidden />
    </section>
  );
}

function ImportPanel({ hidden }: { hidden: boolean }) {
  return (
    <section class="source-panel" data-source-panel="import" hidden={hidden}>
      <h2>Import</h2>
      <label>
        URL of a page or a shared artifact
        <input type="url" name="import_url" placeholder="https://claude.site/artifacts/…" data-import-url />
      </label>
      <label>
        or paste the code <span class="muted">(one file: HTML, a React component, a script …)</span>
        <textarea name="import_paste" maxlength={IMPORT_BODY_MAX_BYTES} data-import-paste />
      </label>
      <div class="actions">
        <button type="button" data-import-preview>
          Preview the files
        </button>
      </div>
      <p class="form-error" role="alert" data-import-error hidden />
      <div class="import-preview" data-import-result hidden aria-live="polite">
        <h3 data-import-title>Preview</h3>
        <p class="muted" data-import-summary />
        <DataTable label="Files the pod will receive" columns={["File", "Size"]}>
          <tbody data-import-files />
        </DataTable>
      </div>
    </section>
  );
}

function PodFields({ catalog, source }: { catalog: NewPodCatalog; source: Source }) {
  return (
    <fieldset class="pod-fields">
      <legend>The pod</legend>
      <label>
        Name{" "}
        <span class="muted" data-name-hint>
          (its address: name.pods…; 3–40 of a–z, 0–9, -)
        </span>
        <input
          type="text"
          name="name"
          pattern={NAME_PATTERN}
          maxlength={40}
          autocomplete="off"
          spellcheck={false}
          required={source === "empty"}
          data-optional
        />
      </label>
      <label data-preset-field>
        Preset
        <select name="preset" data-optional>
          <option value="" data-detect>
            Detect from the source
          </option>
          {catalog.presets.map((p) => (
            <option value={p.slug} selected={source === "empty" && p.slug === "static"}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <fieldset class="plans">
        <legend>Plan</legend>
        {catalog.plans.map((p, i) => (
          <label class="choice plan">
            <input type="radio" name="plan_slug" value={p.slug} checked={i === 0} />
            <span>
              <strong>{p.name}</strong> <span class="price">{monthly(p.monthly_price)}</span>
              <span class="muted">
                {p.cpu} CPU · {p.memory} memory · {p.disk} disk
                {p.database_services ? " · databases" : ""}
              </span>
            </span>
          </label>
        ))}
      </fieldset>
      <label>
        Region
        <select name="region" data-optional>
          <option value="">Nearest to you</option>
          {catalog.regions.map((r) => (
            <option value={r.slug} disabled={!r.available}>
              {r.available ? r.name : `${r.name} (no capacity now)`}
            </option>
          ))}
        </select>
      </label>
    </fieldset>
  );
}

/**
 * `/app/new`: a new pod, empty or from a ZIP, a repository or an import. The page's script
 * (new-pod.client.js) calls the same public API the curl lines show, then follows the new pod's
 * progress through `/app/new/progress/{name}` every second.
 */
export function NewPodPage({
  page,
  catalog,
  source,
}: {
  page: PageContext;
  catalog: NewPodCatalog;
  source: Source;
}) {
  return (
    <Page page={page} section="pods" title="New pod" scripts={["new-pod.js"]}>
      <p class="crumbs">
        <a href="/app">Pods</a> /
      </p>
      <h1>New pod</h1>
      <form class="card new-pod" data-new-pod novalidate>
        <SourcePicker source={source} />
        <ZipPanel hidden={source !== "zip"} />
        <RepoPanel hidden={source !== "repo"} />
        <ImportPanel hidden={source !== "import"} />
        <PodFields catalog={catalog} source={source} />
        <div class="actions">
          <button type="submit" class="primary" data-create>
            Create pod
          </button>
        </div>
        <p class="form-error" role="alert" data-error hidden />
        <p class="form-ok" role="status" data-status hidden />
      </form>
      <section id="new-pod-progress" aria-live="polite" />
      <Curl
        base={page.base}
        calls={[
          {
            method: "POST",
            path: "/api/pods",
            body: { name: "my-site", preset: "static", plan_slug: "launch" },
            note: "An empty pod",
          },
          {
            method: "POST",
            path: "/api/pods/from-zip",
            form: [
              ["zip", "@site.zip"],
              ["plan_slug", "launch"],
            ],
            note: "From a ZIP archive",
          },
          {
            method: "GET",
            path: "/api/repos/branches?repo_url=https%3A%2F%2Fgithub.com%2Fyou%2Fsite.git",
            note: "A repository's branches",
          },
          {
            method: "POST",
            path: "/api/pods/from-repo",
            body: { repo_url: "https://github.com/you/site.git", branch: "main", plan_slug: "launch" },
            note: "From a repository",
          },
          {
            method: "POST",
            path: "/api/imports",
            body: { url: "https://example.com/", dry_run: true },
            note: "An import's preview (nothing is created)",
          },
          {
            method: "POST",
            path: "/api/imports",
            body: { url: "https://example.com/", plan_slug: "launch" },
            note: "The import",
          },
          {
            method: "GET",
            path: "/api/pods/my-site/events",
            note: "The new pod's progress",
          },
        ]}
      />
    </Page>
  );
}

const FINISHED = new Set(["running", "error", "stopped", "suspended", "deleted"]);

/**
 * The new pod's progress, as `/app/new/progress/{name}` renders it: its status and its events so
 * far (oldest first), polled every second until the pod is running or failed (the fragment drops
 * its own polling then). A failure shows the reason the API recorded.
 */
export function NewPodProgress({
  page,
  pod,
  events,
}: {
  page: PageContext;
  pod: PodView;
  events: EventView[];
}) {
  const done = FINISHED.has(pod.status);
  const poll = done
    ? {}
    : {
        "hx-get": `/app/new/progress/${encodeURIComponent(pod.name)}`,
        "hx-trigger": "every 1s",
        "hx-swap": "outerHTML",
      };
  const failure = pod.status === "error" ? events.findLast((e) => e.type === "error") : undefined;
  return (
    <section
      id="new-pod-progress"
      class="card progress-card"
      aria-live="polite"
      data-pod-status={pod.status}
      {...poll}
    >
      <h2>
        {pod.name} <StatusBadge status={pod.status} />
      </h2>
      <ol class="events">
        {events.map((e) => (
          <li class={`event event-${e.type}`}>
            <Time iso={e.created_at} /> <span class="muted">{e.type}</span> {e.message}
          </li>
        ))}
      </ol>
      {pod.status === "running" ? (
        <p class="form-ok">
          {pod.name} is running at{" "}
          <a href={podUrl(page.ctx.env, pod.domain)} rel="noopener" target="_blank">
            {pod.domain}
          </a>
          . <a href={podPath(pod.name)}>Open its page</a>
        </p>
      ) : pod.status === "error" ? (
        <p class="form-error" role="alert">
          {failure?.message ?? "Creating the pod failed."}
        </p>
      ) : done ? (
        <p>
          <a href={podPath(pod.name)}>Open its page</a>
        </p>
      ) : (
        <p class="muted">Creating… this page follows it as it goes.</p>
      )}
    </section>
  );
}
