import { Hono } from "hono";
import { checkPodPath } from "../../../shared/pod-paths";
import { FILE_CONTENT_MAX_BYTES } from "../../../shared/protocol/files";
import type { AppEnv } from "../../http/app-env";
import { enforceFairShare } from "../../http/rate-limit";
import { listPodFiles } from "../../services/files/list";
import { readPodFile } from "../../services/files/transfer";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { type FilesData, FilesPage, type OpenEntry } from "../pages/pod/files";
import { requireSignedIn } from "../session";

const MiB = 1024 * 1024;

/**
 * A pod's Files tab (docs/dashboard.md "Files"): `?path=` is the folder shown, `&entry=` one of its
 * entries (a file opened in the editor, or a folder's actions). Both are read through the Files
 * API's own service verbs, so a path the API refuses is refused here with the API's words. The
 * entry must be a name the listing returned: the page never reads a path the user did not see.
 * Each host operation counts against the pod's and team's `files` fair share as the API's would
 * (a page load is no way around the limit): over it, the page is the API's 429 in words.
 */
export const podFilesRouter = new Hono<AppEnv>();

podFilesRouter.get("/pods/:name/files", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="There is no such pod in this team." />, 404);
  const requested = c.req.query("path") || pod.app_root;
  const checked = checkPodPath(requested);
  const call = { ctx: page.ctx, teamId: page.caller.teamId };
  if (!checked.ok) {
    const data: FilesData = {
      pod,
      dir: pod.app_root,
      listing: { ok: false, error: `path: ${checked.reason}` },
      open: null,
    };
    return c.html(<FilesPage page={page} data={data} />, 400);
  }
  const dir = checked.path;
  await enforceFairShare(c.env, "files", page.caller.teamId, pod.name);
  const listed = await listPodFiles({ ...call, input: { name: pod.name, path: dir } });
  const listing = listed.ok
    ? ({ ok: true, files: listed.value.files } as const)
    : ({ ok: false, error: listed.message } as const);
  const entryName = c.req.query("entry");
  let open: OpenEntry | null = null;
  if (entryName !== undefined && listed.ok) {
    const entry = listed.value.files.find((f) => f.name === entryName);
    if (!entry) open = { kind: "missing", name: entryName };
    else if (entry.is_dir) open = { kind: "dir", entry };
    else if (Number(entry.size) > FILE_CONTENT_MAX_BYTES) {
      open = {
        kind: "not-opened",
        entry,
        reason: `it is ${(Number(entry.size) / MiB).toFixed(1)} MB, and the editor opens files up to ${FILE_CONTENT_MAX_BYTES / MiB} MB.`,
      };
    } else {
      const path = dir === "/" ? `/${entry.name}` : `${dir}/${entry.name}`;
      await enforceFairShare(c.env, "files", page.caller.teamId, pod.name);
      const read = await readPodFile({ ...call, input: { name: pod.name, path } });
      open = read.ok
        ? { kind: "text", entry, content: read.value.content }
        : {
            kind: "not-opened",
            entry,
            reason: read.message.includes("not UTF-8")
              ? "it is not UTF-8 text (a binary file)."
              : `${read.message}.`,
          };
    }
  }
  return c.html(<FilesPage page={page} data={{ pod, dir, listing, open }} />);
});
