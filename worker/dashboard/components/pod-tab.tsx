import type { Context } from "hono";
import type { AppEnv } from "../../http/app-env";
import type { PodView } from "../../services/pods/view";
import { type PageContext, pageContext } from "../layout";
import { ErrorPage } from "./error-page";
import { podForPage } from "./pod-page";

/**
 * What a pod's tab is rendered from: the page context and the team's pod named in the path, or the
 * 404 page the caller answers instead (another team's pod is exactly a missing one, as in the API).
 */
export async function podTab(
  c: Context<AppEnv>,
): Promise<{ page: PageContext; pod: PodView } | { notFound: Response }> {
  const page = await pageContext(c);
  const pod = await podForPage(page, c.req.param("name") ?? "");
  if (!pod) return { notFound: await c.html(<ErrorPage status={404} message="pod not found" />, 404) };
  return { page, pod };
}

/** A non-negative integer query parameter, or `fallback` for anything else. */
export function offsetParam(value: string | undefined, fallback = 0): number {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isSafeInteger(n) && n >= 0 ? n : fallback;
}
