/**
 * Paths a caller may name inside a pod. Shared by the Worker (first check, a clear 400) and the
 * agent (the check again, since the agent trusts no caller): both must agree, so there is one copy.
 *
 * A path is accepted when it is absolute, has no `..` segment, holds no NUL or control character,
 * and lies inside one of the allowed roots. `.` segments and repeated slashes are normalised away.
 * The check is lexical on purpose: it never resolves symlinks. What a path resolves to inside the
 * pod is reached as pod_user in the pod's own filesystem view, so a symlink planted in the home
 * only reaches what the pod's user could read anyway.
 */

export const POD_HOME = "/home/pod_user";
export const POD_PATH_ROOTS = [POD_HOME, "/var/www", "/tmp"] as const;
export const MAX_POD_PATH_LENGTH = 4096;

export type PodPathCheck = { ok: true; path: string } | { ok: false; reason: string };

/** Normalised absolute path inside an allowed root, or why not (a phrase for `"<field>: " + reason`). */
export function checkPodPath(input: string): PodPathCheck {
  if (input.length === 0) return { ok: false, reason: "must not be empty" };
  if (input.length > MAX_POD_PATH_LENGTH)
    return { ok: false, reason: `must be at most ${MAX_POD_PATH_LENGTH} characters` };
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(input))
    return { ok: false, reason: "must not contain control characters" };
  if (!input.startsWith("/")) return { ok: false, reason: "must be an absolute path" };
  const segments = input.split("/").filter((s) => s !== "" && s !== ".");
  if (segments.includes("..")) return { ok: false, reason: 'must not contain ".." segments' };
  const path = `/${segments.join("/")}`;
  const inside = POD_PATH_ROOTS.some((root) => path === root || path.startsWith(`${root}/`));
  if (!inside) return { ok: false, reason: `must be inside ${POD_PATH_ROOTS.join(", ")}` };
  return { ok: true, path };
}
