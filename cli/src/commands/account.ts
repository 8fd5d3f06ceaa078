import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import path from "node:path";
import { type Ctx, requireCredential } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";
import { table } from "../lib/output";
import { confirm } from "../lib/tty";

/** teams, API tokens and the account's SSH keys: the account's own resources. */

export async function teamsLs(ctx: Ctx) {
  requireCredential(ctx);
  const [teams, me] = await Promise.all([
    ctx.api.call("get", "/api/teams"),
    ctx.api.call("get", "/api/auth/user"),
  ]);
  ctx.out.result(teams, () =>
    table(
      ["", "ID", "NAME", "SLUG", "ROLE"],
      teams.map((t) => [t.id === me.active_team_id ? "*" : "", t.id, t.name, t.slug, t.role]),
    ),
  );
}

/** Switches the active team of a session: by id, slug or name. */
export async function teamsSwitch(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const [which = ""] = args;
  const teams = await ctx.api.call("get", "/api/teams");
  const team = teams.find((t) => t.id === which || t.slug === which || t.name === which);
  if (!team)
    throw new CliError(`no team ${JSON.stringify(which)} among yours (podhost teams ls)`, EXIT.notFound);
  const user = await ctx.api.call("post", "/api/teams/switch", { body: { team_id: team.id } });
  ctx.out.result(user, () => `The active team is now ${team.name}.`);
}

export async function tokensLs(ctx: Ctx) {
  requireCredential(ctx);
  const tokens = await ctx.api.call("get", "/api/api-tokens");
  ctx.out.result(tokens, () =>
    tokens.length === 0
      ? "No API tokens."
      : table(
          ["ID", "NAME", "PREFIX", "LAST USED", "EXPIRES"],
          tokens.map((t) => [t.id, t.name, t.prefix, t.last_used_at ?? "never", t.expires_at ?? "never"]),
        ),
  );
}

export async function tokensCreate(ctx: Ctx, args: string[], opts: { expires?: string }) {
  requireCredential(ctx);
  const days = opts.expires === undefined ? undefined : Number(opts.expires);
  if (days !== undefined && !(Number.isInteger(days) && days >= 0))
    throw new CliError("--expires: a whole number of days (0: never)", EXIT.usage);
  const token = await ctx.api.call("post", "/api/api-tokens", {
    body: { name: args[0] ?? "", expires_in_days: days },
  });
  ctx.out.result(token, () => `${token.token}\n(shown once: keep it, e.g. as PODHOST_TOKEN in CI)`);
}

export async function tokensRevoke(ctx: Ctx, args: string[], opts: { yes?: boolean }) {
  requireCredential(ctx);
  const [id = ""] = args;
  if (!opts.yes && !(await confirm(`Revoke the API token ${id}?`, "--yes")))
    throw new CliError("not revoked");
  const result = await ctx.api.call("delete", "/api/api-tokens/{id}", { params: { id } });
  ctx.out.result({ id, ...result }, () => `Revoked ${id}.`);
}

export async function keysLs(ctx: Ctx) {
  requireCredential(ctx);
  const keys = await ctx.api.call("get", "/api/ssh-keys");
  ctx.out.result(keys, () =>
    keys.length === 0
      ? "No SSH keys."
      : table(
          ["ID", "NAME", "FINGERPRINT", "AUTO"],
          keys.map((k) => [k.id, k.name, k.fingerprint, k.auto_inject ? "yes" : "no"]),
        ),
  );
}

/** The first public key of ~/.ssh that exists (ed25519, then ecdsa, then rsa), or the file named. */
export async function readPublicKey(file?: string): Promise<{ file: string; key: string }> {
  const candidates = file
    ? [file]
    : ["id_ed25519.pub", "id_ecdsa.pub", "id_rsa.pub"].map((n) => path.join(homedir(), ".ssh", n));
  for (const candidate of candidates) {
    const key = await readFile(candidate, "utf8").catch(() => undefined);
    if (key?.trim()) return { file: candidate, key: key.trim() };
  }
  throw new CliError(
    file
      ? `${file}: cannot be read`
      : "no public key in ~/.ssh (id_ed25519.pub, id_ecdsa.pub, id_rsa.pub): name one",
    EXIT.usage,
  );
}

export async function keysAdd(ctx: Ctx, args: string[], opts: { name?: string; auto?: boolean }) {
  requireCredential(ctx);
  const { file, key } = await readPublicKey(args[0]);
  const created = await ctx.api.call("post", "/api/ssh-keys", {
    body: { public_key: key, name: opts.name ?? path.basename(file), auto_inject: opts.auto },
  });
  ctx.out.result(created, () => `Added ${created.name} (${created.fingerprint}).`);
}

export async function keysRm(ctx: Ctx, args: string[]) {
  requireCredential(ctx);
  const [id = ""] = args;
  const result = await ctx.api.call("delete", "/api/ssh-keys/{id}", { params: { id } });
  ctx.out.result({ id, ...result }, () => `Removed ${id}.`);
}
