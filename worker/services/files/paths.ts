import { fail, ok, type Result } from "../../../shared/errors";
import { checkPodPath, POD_HOME } from "../../../shared/pod-paths";

/** Where listing and upload go when the caller names no path: the app root. */
export const APP_ROOT = `${POD_HOME}/app`;

/** The Worker's first check of a path (the agent checks again): 400 naming the field. */
export function podPathOf(field: string, input: string): Result<string> {
  const checked = checkPodPath(input);
  return checked.ok ? ok(checked.path) : fail("bad_request", `${field}: ${checked.reason}`);
}

/** The directory a (checked) path is in: `/tmp/a/b` → `/tmp/a`. */
export const parentOf = (path: string): string => path.slice(0, path.lastIndexOf("/")) || "/";

const MAX_NAME_BYTES = 255;

/**
 * An uploaded file's name, as the multipart part gives it, must be one path segment: not empty,
 * not `.` or `..`, no `/`, no control character, at most 255 bytes (a Linux name's limit).
 */
export function uploadNameOf(name: string): Result<string> {
  const why =
    name === ""
      ? "must have a file name"
      : name === "." || name === ".."
        ? `must not be named ${name}`
        : name.includes("/")
          ? "file name must not contain /"
          : // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
            /[\u0000-\u001f\u007f]/.test(name)
            ? "file name must not contain control characters"
            : new TextEncoder().encode(name).length > MAX_NAME_BYTES
              ? `file name must be at most ${MAX_NAME_BYTES} bytes`
              : null;
  return why ? fail("bad_request", `file: ${why}`) : ok(name);
}
