import type { Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import { secretBox } from "../../lib/secret-box";

/**
 * Service passwords: generated here (the host never chooses one), sealed at rest with the
 * SERVICE_PASSWORD_KEY secret, bound to the pod and the service type (a failed install's retry is a
 * new row that keeps the password), opened only to hand to the host for an install or to the team's
 * credentials request; never in a list, an event or a log.
 */

const box = (env: Bindings) => secretBox(env, "service-password");
/** The sealed password's owner: the pod and the type, as `<pod id>/<type>`. */
const ownerOf = (service: { podId: string; serviceType: string }) =>
  `${service.podId}/${service.serviceType}`;

export const passwordsUsable = (env: Bindings): Result<true> => box(env).usable();
export const sealPassword = (
  env: Bindings,
  service: { podId: string; serviceType: string },
  password: string,
) => box(env).seal(ownerOf(service), password);
export const openPassword = (
  env: Bindings,
  service: { podId: string; serviceType: string },
  stored: string,
) => box(env).open(ownerOf(service), stored);

/** 24 random bytes as base64url: 32 characters of [A-Za-z0-9_-] (ServicePassword), 192 bits. */
export function newServicePassword(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_");
}
