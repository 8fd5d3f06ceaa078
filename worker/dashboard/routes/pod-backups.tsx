import { Hono } from "hono";
import type { AppEnv } from "../../http/app-env";
import { unwrap } from "../../http/errors";
import { serviceContext } from "../../http/router";
import { listBackups } from "../../services/backups/manage";
import { getSchedule } from "../../services/backups/schedule";
import { ErrorPage } from "../components/error-page";
import { podForPage } from "../components/pod-page";
import { pageContext } from "../layout";
import { BackupRows, BackupsPage } from "../pages/pod-data/backups";
import { requireSignedIn } from "../session";

/** A pod's Backups tab (docs/dashboard.md "Backups"): list, create, restore, download, import, schedule. */
export const podBackupsArea = new Hono<AppEnv>();

podBackupsArea.get("/pods/:name/backups", requireSignedIn, async (c) => {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name"));
  if (!pod) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  const call = { ctx: page.ctx, teamId: page.caller.teamId, input: { name: pod.name } };
  const [list, schedule] = await Promise.all([listBackups(call), getSchedule(call)]);
  return c.html(<BackupsPage page={page} pod={pod} list={unwrap(list)} schedule={unwrap(schedule)} />);
});

/** The backups' rows alone: the fragment htmx polls while a backup is in progress. */
podBackupsArea.get("/pods/:name/backups/rows", requireSignedIn, async (c) => {
  const name = c.req.param("name");
  const listed = await listBackups({
    ctx: serviceContext(c),
    teamId: c.get("caller").teamId,
    input: { name },
  });
  if (!listed.ok) return c.html(<ErrorPage status={404} message="pod not found" />, 404);
  return c.html(<BackupRows pod={{ name }} backups={listed.value.backups} />);
});
