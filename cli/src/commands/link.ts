import { rm } from "node:fs/promises";
import path from "node:path";
import type { Ctx } from "../lib/context";
import { requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { findLink, LINK_FILE, writeLink } from "../lib/link";

/** `link [pod]`: checks the pod exists for this credential, then writes .podhost.json here. */
export async function link(ctx: Ctx, args: string[]) {
  const [pod] = args;
  if (!pod) {
    const found = await findLink();
    if (!found) throw new CliError("this directory is not linked: podhost link NAME", EXIT.notFound);
    ctx.out.result(
      { pod: found.pod, file: path.join(found.dir, LINK_FILE) },
      () => `${found.pod} (${path.join(found.dir, LINK_FILE)})`,
    );
    return;
  }
  requireCredential(ctx);
  const view = await ctx.api.call("get", "/api/pods/{name}", { params: { name: pod } });
  const file = await writeLink(process.cwd(), view.name);
  ctx.out.result(
    { pod: view.name, file },
    () => `Linked ${path.relative(process.cwd(), file) || LINK_FILE} to the pod ${view.name}.`,
  );
}

export async function unlink(ctx: Ctx) {
  const found = await findLink();
  if (!found) throw new CliError("this directory is not linked", EXIT.notFound);
  await rm(path.join(found.dir, LINK_FILE));
  ctx.out.result({ pod: found.pod, unlinked: true }, () => `Unlinked ${found.pod}.`);
}
