import type { FormPart } from "./multipart";

/** A multipart part's header block and its parameters (RFC 7578, RFC 2045 syntax). */

/** Malformed or oversized input. The message is meant for the client (a 400's `error`). */
export class MultipartError extends Error {
  override name = "MultipartError";
}

/** A header block (UTF-8, as browsers and undici send names) → the part's name, filename, type. */
export function parsePartHeaders(text: string): Omit<FormPart, "body"> {
  let disposition: string | undefined;
  let contentType: string | undefined;
  // A line starting with whitespace continues the header before it (obsolete folding).
  const lines = text === "" ? [] : text.replace(/\r\n[ \t]+/g, " ").split("\r\n");
  for (const line of lines) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new MultipartError("a multipart part has a malformed header line");
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-disposition") disposition ??= value;
    else if (name === "content-type") contentType ??= value;
  }
  const { value, params } = parseParameters(disposition ?? "");
  const name = value.toLowerCase() === "form-data" ? params.get("name") : undefined;
  if (name === undefined) {
    throw new MultipartError('a multipart part has no Content-Disposition "form-data" with a name');
  }
  return { name, filename: params.get("filename"), contentType };
}

/**
 * `value; a=b; c="d"` → the value and the parameters by lowercased name (the first of repeats).
 * Quoted strings lose the backslash of `\"` and `\\` only: browsers send other backslashes (Windows
 * names) unescaped, and percent-encode `"`, CR and LF, which is left as sent, as workerd's own
 * `formData()` does. `filename*` (RFC 5987) stays under its own name, so it is never the filename.
 */
export function parseParameters(header: string): { value: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  let semicolon = header.indexOf(";");
  const value = (semicolon === -1 ? header : header.slice(0, semicolon)).trim();
  while (semicolon !== -1) {
    const start = semicolon + 1;
    const equals = header.indexOf("=", start);
    semicolon = header.indexOf(";", start);
    if (equals === -1 || (semicolon !== -1 && semicolon < equals)) continue; // no value: ignored
    const name = header.slice(start, equals).trim().toLowerCase();
    let at = equals + 1;
    while (header[at] === " " || header[at] === "\t") at++;
    let param: string;
    if (header[at] === '"') {
      [param, at] = readQuoted(header, at + 1);
      semicolon = header.indexOf(";", at);
    } else {
      param = header.slice(at, semicolon === -1 ? undefined : semicolon).trim();
    }
    if (!params.has(name)) params.set(name, param);
  }
  return { value, params };
}

/** The quoted string whose content starts at `from`, and the index after its closing quote. */
function readQuoted(text: string, from: number): [string, number] {
  let out = "";
  let run = from;
  let at = from;
  for (; at < text.length && text[at] !== '"'; at++) {
    const next = text[at + 1];
    if (text[at] === "\\" && (next === '"' || next === "\\")) {
      out += text.slice(run, at);
      at++;
      run = at;
    }
  }
  return [out + text.slice(run, at), at + 1];
}
