import { Hono } from "hono";
import { fail, ok, type Result } from "../../shared/errors";
import { hostAgentStub } from "../durable-objects/host-agent/client";
import type { AppEnv } from "../http/app-env";
import { jsonBodyLimit } from "../http/body-limit";
import { unwrap } from "../http/errors";
import { requireOperatorToken } from "../http/operator-auth";
import { findHostByName, listHostMoves, startHostMoves } from "../services/hosts/moves";
import type { ReconcileReport } from "../services/reconcile/host";

/**
 * What an operator does to a host through the API (docs/operations.md), with an operator token
 * (`opt_…`, http/operator-auth.ts); not part of the tenants' API or its OpenAPI document.
 * - `POST /operator/hosts/{host}/evacuate`: drain the host and move every pod to another host of its
 *   region, one at a time; 202 with the queued moves.
 * - `POST /operator/hosts/{host}/lost`: the host is gone: recreate each pod elsewhere from its latest
 *   verified backup (a pod without one is `skipped`); 202 with the moves.
 * - `GET /operator/hosts/{host}/moves`: every move off the host, with its status, new host, SSH port,
 *   backup time, measured downtime and reason.
 * - `POST /operator/hosts/{host}/reconcile[?dry_run=true][&grace_s=600]`: one pass of the reconciler
 *   (docs/reliability.md "Drift"): orphans on the host and in R2 found, the safe ones older than the
 *   grace period removed (none with dry_run), pods without their container marked; 200 with the report.
 * - `GET /operator/hosts/{host}/reconcile`: the host's latest pass (hello, periodic or an operator's).
 * `{host}` is the host's name or id.
 */
export const operatorHostsRouter = new Hono<AppEnv>()
  .use("*", requireOperatorToken)
  .post("/:host/evacuate", jsonBodyLimit, async (c) => {
    const view = unwrap(
      await startHostMoves({
        env: c.env,
        db: c.get("db"),
        input: { host: c.req.param("host"), kind: "evacuate" },
      }),
    );
    return c.json(view, 202);
  })
  .post("/:host/lost", jsonBodyLimit, async (c) => {
    const view = unwrap(
      await startHostMoves({
        env: c.env,
        db: c.get("db"),
        input: { host: c.req.param("host"), kind: "lost" },
      }),
    );
    return c.json(view, 202);
  })
  .get("/:host/moves", async (c) =>
    c.json(unwrap(await listHostMoves({ db: c.get("db"), input: { host: c.req.param("host") } }))),
  )
  .post("/:host/reconcile", jsonBodyLimit, async (c) => {
    const options = unwrap(reconcileOptions(c.req.query("dry_run"), c.req.query("grace_s")));
    const host = await findHostByName(c.get("db"), c.req.param("host"));
    if (!host) return c.json({ error: `no host named ${c.req.param("host")}` }, 404);
    const stub = hostAgentStub(c.env, host.id);
    if (!(await stub.connected()))
      unwrap(
        fail(
          "unavailable",
          `server ${host.name} is unavailable: its agent is not connected; try again shortly`,
        ),
      );
    // DO RPC's type mapping flattens the report's union fields; it is the object's own value
    const report = (await stub.reconcile("operator", options)) as unknown as Result<ReconcileReport>;
    return c.json(unwrap(report));
  })
  .get("/:host/reconcile", async (c) => {
    const host = await findHostByName(c.get("db"), c.req.param("host"));
    if (!host) return c.json({ error: `no host named ${c.req.param("host")}` }, 404);
    const report = (await hostAgentStub(c.env, host.id).lastReconcile()) as ReconcileReport | null;
    return c.json({ report });
  });

/** `dry_run` (true/false) and `grace_s` (whole seconds, at most a day) as the reconciler takes them. */
function reconcileOptions(
  dryRun: string | undefined,
  graceS: string | undefined,
): Result<{ dryRun: boolean; graceMs?: number }> {
  if (dryRun !== undefined && dryRun !== "true" && dryRun !== "false")
    return fail("bad_request", "dry_run: must be true or false");
  if (graceS === undefined) return ok({ dryRun: dryRun === "true" });
  const seconds = Number(graceS);
  if (!/^\d{1,6}$/.test(graceS) || seconds > 86_400)
    return fail("bad_request", "grace_s: must be a whole number of seconds from 0 to 86400");
  return ok({ dryRun: dryRun === "true", graceMs: seconds * 1000 });
}
