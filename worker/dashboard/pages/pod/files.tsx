import { checkPodPath, POD_HOME, POD_PATH_ROOTS } from "../../../../shared/pod-paths";
import { FILE_CONTENT_MAX_BYTES } from "../../../../shared/protocol/files";
import type { FileEntryView } from "../../../services/files/list";
import type { PodView } from "../../../services/pods/view";
import { ApiForm } from "../../components/api-form";
import { Curl } from "../../components/curl";
import { DataTable, EmptyRow } from "../../components/data-table";
import { PodPage, podPath } from "../../components/pod-page";
import type { PageContext } from "../../layout";

const MiB = 1024 * 1024;

/** What the editor shows for the entry the URL names. */
export type OpenEntry =
  | { kind: "text"; entry: FileEntryView; content: string }
  | { kind: "not-opened"; entry: FileEntryView; reason: string }
  | { kind: "dir"; entry: FileEntryView }
  | { kind: "missing"; name: string };

export interface FilesData {
  pod: PodView;
  /** the directory shown (normalised), or the requested text when it is not a valid path */
  dir: string;
  listing: { ok: true; files: FileEntryView[] } | { ok: false; error: string };
  open: OpenEntry | null;
}

const join = (dir: string, name: string) => (dir === "/" ? `/${name}` : `${dir}/${name}`);
const parentOf = (path: string) => path.slice(0, path.lastIndexOf("/")) || "/";

/** The Files tab's own URL for a directory (and an entry in it); every part URL-encoded. */
export const filesHref = (pod: string, dir: string, entry?: string) =>
  `${podPath(pod, "files")}?path=${encodeURIComponent(dir)}${entry === undefined ? "" : `&entry=${encodeURIComponent(entry)}`}`;

const apiOf = (pod: string) => `/api/pods/${encodeURIComponent(pod)}`;
const downloadHref = (pod: string, path: string) =>
  `${apiOf(pod)}/files/download?path=${encodeURIComponent(path)}`;

const size = (s: string) => {
  const n = Number(s);
  if (!Number.isFinite(n)) return s;
  if (n < 1024) return `${n} B`;
  if (n < MiB) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / MiB).toFixed(1)} MB`;
};

/** The directory as links, one per segment that is itself a browsable directory. */
function Crumbs({ pod, dir }: { pod: string; dir: string }) {
  const segments = dir.split("/").filter(Boolean);
  return (
    <nav class="crumbs path-crumbs" aria-label="Directory">
      <span>/</span>
      {segments.map((segment, i) => {
        const path = `/${segments.slice(0, i + 1).join("/")}`;
        const last = i === segments.length - 1;
        return (
          <>
            {checkPodPath(path).ok && !last ? (
              <a href={filesHref(pod, path)}>{segment}</a>
            ) : (
              <span aria-current={last ? "location" : undefined}>{segment}</span>
            )}
            {last ? null : <span>/</span>}
          </>
        );
      })}
    </nav>
  );
}

/** Rename, copy, download and delete of one entry, each a call of the public Files API. */
function EntryActions({ pod, dir, entry }: { pod: string; dir: string; entry: FileEntryView }) {
  const path = join(dir, entry.name);
  const back = `go:${filesHref(pod, dir)}`;
  const what = entry.is_dir ? "folder" : "file";
  return (
    <section class="card" aria-labelledby="entry-h">
      <h2 id="entry-h">
        {entry.is_dir ? "Folder" : "File"} <code>{entry.name}</code>
      </h2>
      <div class="actions">
        {entry.is_dir ? (
          <a class="button" href={filesHref(pod, path)}>
            Open folder
          </a>
        ) : (
          <a class="button" href={downloadHref(pod, path)} download={entry.name}>
            Download {entry.name}
          </a>
        )}
      </div>
      <div class="grid">
        <ApiForm action={`${apiOf(pod)}/files/rename`} then={back}>
          <input type="hidden" name="old_path" value={path} />
          <label>
            Rename or move to (full path)
            <input name="new_path" value={path} required autocomplete="off" />
          </label>
          <button type="submit">Rename {what}</button>
        </ApiForm>
        <ApiForm action={`${apiOf(pod)}/files/copy`} then={back}>
          <input type="hidden" name="source_path" value={path} />
          <label>
            Copy to (full path)
            <input name="dest_path" value={`${path}.copy`} required autocomplete="off" />
          </label>
          <button type="submit">Copy {what}</button>
        </ApiForm>
      </div>
      <ApiForm
        action={`${apiOf(pod)}/files?path=${encodeURIComponent(path)}`}
        method="DELETE"
        then={back}
        confirm={`Delete ${path}${entry.is_dir ? " and everything in it" : ""}? This cannot be undone.`}
      >
        <button type="submit" class="danger">
          Delete {what}
        </button>
      </ApiForm>
    </section>
  );
}

/** The open file: its text in a textarea saved through the Files API, or why it is not shown. */
function Editor({ pod, dir, open }: { pod: string; dir: string; open: OpenEntry }) {
  if (open.kind === "missing") {
    return (
      <p class="notice" role="status">
        There is no <code>{open.name}</code> in this folder (any more).
      </p>
    );
  }
  if (open.kind === "dir") return <EntryActions pod={pod} dir={dir} entry={open.entry} />;
  const path = join(dir, open.entry.name);
  return (
    <>
      {open.kind === "text" ? (
        <section class="card editor" aria-labelledby="editor-h">
          <h2 id="editor-h">
            Edit <code>{path}</code>
          </h2>
          <ApiForm action={`${apiOf(pod)}/files/content`} method="PUT" then="none" success="Saved.">
            <input type="hidden" name="path" value={path} />
            <label>
              <span class="visually-hidden">Content of {open.entry.name}</span>
              <textarea name="content" class="code-editor" spellcheck={false} rows={24}>
                {`\n${open.content}`}
              </textarea>
            </label>
            <button type="submit" class="primary">
              Save {open.entry.name}
            </button>
          </ApiForm>
        </section>
      ) : (
        <p class="notice" role="status">
          <code>{open.entry.name}</code> is not opened in the editor: {open.reason}{" "}
          <a href={downloadHref(pod, path)} download={open.entry.name}>
            Download it
          </a>{" "}
          instead.
        </p>
      )}
      <EntryActions pod={pod} dir={dir} entry={open.entry} />
    </>
  );
}

function Listing({ pod, dir, files }: { pod: string; dir: string; files: FileEntryView[] }) {
  const up = parentOf(dir);
  return (
    <DataTable
      label={`Files in ${dir}`}
      columns={["Name", "Size", "Permissions", { hidden: "Actions" }]}
      class="files"
    >
      <tbody>
        {checkPodPath(up).ok && up !== dir ? (
          <tr>
            <td colspan={4}>
              <a href={filesHref(pod, up)}>↑ Parent folder</a>
            </td>
          </tr>
        ) : null}
        {files.length === 0 ? (
          <EmptyRow span={4}>
            This folder is empty (or does not exist yet: uploading or saving into it creates it).
          </EmptyRow>
        ) : (
          files.map((f) => (
            <tr>
              <td class="file-name">
                {f.is_dir ? (
                  <a href={filesHref(pod, join(dir, f.name))}>
                    <span aria-hidden="true">📁 </span>
                    {f.name}/
                  </a>
                ) : (
                  <a href={filesHref(pod, dir, f.name)}>{f.name}</a>
                )}
              </td>
              <td>{f.is_dir ? <span class="muted">folder</span> : size(f.size)}</td>
              <td>
                <code>{f.permissions}</code>
              </td>
              <td>
                <a
                  href={filesHref(pod, dir, f.name)}
                  aria-label={`${f.is_dir ? "Manage" : "Open"} ${f.name}`}
                >
                  {f.is_dir ? "Manage" : "Open"}
                </a>
                {f.is_dir ? null : (
                  <>
                    {" · "}
                    <a
                      href={downloadHref(pod, join(dir, f.name))}
                      download={f.name}
                      aria-label={`Download ${f.name}`}
                    >
                      Download
                    </a>
                  </>
                )}
              </td>
            </tr>
          ))
        )}
      </tbody>
    </DataTable>
  );
}

export function FilesPage({ page, data }: { page: PageContext; data: FilesData }) {
  const { pod, dir, listing, open } = data;
  const api = apiOf(pod.name);
  const sample = join(dir, "index.html");
  return (
    <PodPage page={page} pod={pod} tab="files" scripts={["files.js"]}>
      <div class="files-head">
        <Crumbs pod={pod.name} dir={dir} />
        <nav class="actions" aria-label="Places">
          <a href={filesHref(pod.name, pod.app_root || POD_HOME)}>App</a>
          {POD_PATH_ROOTS.map((root) => (
            <a href={filesHref(pod.name, root)}>{root === POD_HOME ? "Home" : root}</a>
          ))}
        </nav>
      </div>
      {listing.ok ? null : (
        <p class="form-error" role="alert">
          The folder cannot be listed: {listing.error}
        </p>
      )}
      {open ? <Editor pod={pod.name} dir={dir} open={open} /> : null}
      {listing.ok ? <Listing pod={pod.name} dir={dir} files={listing.files} /> : null}

      <div class="grid files-tools">
        <section
          class="card upload"
          aria-labelledby="upload-h"
          data-upload={`${api}/files/upload`}
          data-dir={dir}
        >
          <h2 id="upload-h">Upload into this folder</h2>
          <div class="drop-zone" data-drop-zone>
            <p>Drop files here, or</p>
            <label>
              Choose files (at most 32 MB each)
              <input type="file" multiple data-upload-input />
            </label>
          </div>
          <div class="upload-progress" data-upload-progress hidden>
            <label>
              <span data-upload-label>Uploading</span>
              <progress max={100} value={0} data-upload-bar />
            </label>
            <p class="muted" aria-live="polite" data-upload-status />
          </div>
          <p class="form-error" role="alert" data-upload-error hidden />
        </section>
        <section class="card" aria-labelledby="new-h">
          <h2 id="new-h">New</h2>
          <ApiForm action={`${api}/folders`}>
            <label>
              New folder (full path)
              <input name="path" value={join(dir, "new-folder")} required autocomplete="off" />
            </label>
            <button type="submit">Create folder</button>
          </ApiForm>
          <ApiForm action={`${api}/files/content`} method="PUT">
            <label>
              New empty file (full path)
              <input name="path" value={join(dir, "new-file.txt")} required autocomplete="off" />
            </label>
            <input type="hidden" name="content" value="" />
            <button type="submit">Create file</button>
          </ApiForm>
        </section>
      </div>
      <p class="muted">
        The editor opens UTF-8 text files up to {FILE_CONTENT_MAX_BYTES / MiB} MB; anything else is offered as
        a download. The pod must be running.
      </p>

      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `${api}/files?path=${encodeURIComponent(dir)}`, note: "List this folder" },
          {
            method: "GET",
            path: `${api}/files/content?path=${encodeURIComponent(sample)}`,
            note: "Read a text file",
          },
          {
            method: "PUT",
            path: `${api}/files/content`,
            body: { path: sample, content: "<h1>Hello</h1>" },
            note: "Save a text file",
          },
          {
            method: "POST",
            path: `${api}/files/rename`,
            body: { old_path: sample, new_path: `${sample}.old` },
            note: "Rename",
          },
          {
            method: "POST",
            path: `${api}/files/copy`,
            body: { source_path: sample, dest_path: `${sample}.copy` },
            note: "Copy",
          },
          {
            method: "POST",
            path: `${api}/folders`,
            body: { path: join(dir, "new-folder") },
            note: "New folder",
          },
          {
            method: "DELETE",
            path: `${api}/files?path=${encodeURIComponent(sample)}`,
            note: "Delete (folders recursively)",
          },
        ]}
      />
      <details class="curl">
        <summary>API: upload and download</summary>
        <pre>
          <code>{`curl -X POST '${page.base}${api}/files/upload' -H "Authorization: Bearer $PODHOST_TOKEN" -F 'path=${dir.replaceAll("'", `'\\''`)}' -F file=@./index.html`}</code>
        </pre>
        <pre>
          <code>{`curl -OJ '${page.base}${api}/files/download?path=${encodeURIComponent(sample)}' -H "Authorization: Bearer $PODHOST_TOKEN"`}</code>
        </pre>
      </details>
    </PodPage>
  );
}
