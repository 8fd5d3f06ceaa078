import { fail, ok, type Result } from "../../../shared/errors";

/** most segments and characters a pasted or crawled file's path may have */
const MAX_PATH_CHARS = 255;
const MAX_DEPTH = 16;

/**
 * A file path inside the new pod's app root, as a paste or a crawl names it: relative, `/`-separated,
 * no `.`/`..` or empty segments, no backslashes or control characters. Checked character by
 * character (tenant text meets no regex); the agent's unpacking checks again (zip-slip).
 */
export function checkProjectPath(raw: string): Result<string> {
  const path = raw.startsWith("./") ? raw.slice(2) : raw;
  if (path.length === 0) return fail("bad_request", "is empty");
  if (path.length > MAX_PATH_CHARS) return fail("bad_request", `is longer than ${MAX_PATH_CHARS} characters`);
  if (path.startsWith("/")) return fail("bad_request", `${JSON.stringify(path)} must be relative`);
  for (const ch of path) {
    const code = ch.codePointAt(0) ?? 0;
    if (code < 0x20 || code === 0x7f || ch === "\\")
      return fail("bad_request", `${JSON.stringify(path)} holds a control character or a backslash`);
  }
  const segments = path.split("/");
  if (segments.length > MAX_DEPTH) return fail("bad_request", `${JSON.stringify(path)} is nested too deep`);
  if (segments.some((s) => s === "" || s === "." || s === ".."))
    return fail("bad_request", `${JSON.stringify(path)} has an empty, "." or ".." segment`);
  return ok(path);
}
