import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { jsonBodyLimit } from "../http/body-limit";
import { unwrap } from "../http/errors";
import { requireOperatorToken } from "../http/operator-auth";
import { listHostMoves, startHostMoves } from "../services/hosts/moves";

/**
 * What an operator does to a host through the API (docs/operations.md), with an operator token
 * (`opt_…`, http/operator-auth.ts); not part of the tenants' API or its OpenAPI document.
 * - `POST /operator/hosts/{host}/evacuate`: drain the host and move every pod to another host of its
 *   region, one at a time; 202 with the queued moves.
 * - `POST /operator/hosts/{host}/lost`: the host is gone: recreate each pod elsewhere from its latest
 *   verified backup (a pod without one is `skipped`); 202 with the moves.
 * - `GET /operator/hosts/{host}/moves`: every move off the host, with its status, new host, SSH port,
 *   backup time, measured downtime and reason.
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
  );
