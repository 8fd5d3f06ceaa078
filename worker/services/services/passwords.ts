import type { Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import { secretBox } from "../../lib/secret-box";

/**
 * Service passwords: generated here (the host never chooses one), sealed at rest with the
 * SERVICE_PASSWORD_KEY secret, opened only to hand to the host for an install or to the team's
 * credentials request; never in a list, an event or a log.
 */

const box = (env: Bindings) => secretBox(env, "SERVICE_PASSWORD_KEY", "database services");

export const passwordsUsable = (env: Bindings): Result<true> => box(env).usable();
export const sealPassword = (env: Bindings, password: string) => box(env).seal(password);
export const openPassword = (env: Bindings, stored: string) => box(env).open(stored);

/** 24 random bytes as base64url: 32 characters of [A-Za-z0-9_-] (ServicePassword), 192 bits. */
export function newServicePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}
