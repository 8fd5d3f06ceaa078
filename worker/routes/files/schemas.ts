import { z } from "@hono/zod-openapi";
import { POD_PATH_ROOTS } from "../../../shared/pod-paths";
import { StatusBody } from "../../http/router";
import { APP_ROOT } from "../../services/files/paths";

/** The Files routes' shared schemas; a schema one route uses lives in that route's file. */

export const PATH_RULE = `absolute, no \`..\` segments, inside ${POD_PATH_ROOTS.join(", ")}`;

export const PodPath = (description: string) =>
  z
    .string()
    .max(4096)
    .openapi({ description: `${description}; ${PATH_RULE}`, example: `${APP_ROOT}/index.html` });

export const PathQuery = (description: string) => z.object({ path: PodPath(description) });

export const PathResult = <S extends string>(status: S) => StatusBody(status).extend({ path: z.string() });
