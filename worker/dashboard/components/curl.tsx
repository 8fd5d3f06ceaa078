/** A shell word in single quotes: what a person pastes runs exactly this, whatever the value holds. */
const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

/**
 * The `curl` line that does what a page shows or a form does (docs/dashboard.md: every page shows
 * the API call beside it). `$PODHOST_TOKEN` stands for an API token (`ipk_…`), never the session.
 */
export function curlLine(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  auth = true,
  form?: [string, string][],
): string {
  const parts = ["curl"];
  if (method !== "GET") parts.push("-X", method);
  parts.push(shellQuote(base + path));
  if (auth) parts.push("-H", '"Authorization: Bearer $PODHOST_TOKEN"');
  // a multipart upload: `-F 'zip=@site.zip'` sends the file, `-F 'plan_slug=launch'` a field
  for (const [name, value] of form ?? []) parts.push("-F", shellQuote(`${name}=${value}`));
  if (body !== undefined) {
    parts.push("-H", "'content-type: application/json'", "-d", shellQuote(JSON.stringify(body)));
  }
  return parts.join(" ");
}

export interface CurlCall {
  method: string;
  path: string;
  body?: unknown;
  /** what the call does, shown above it */
  note?: string;
  /** false for a public call (an invitation's): no Authorization header */
  auth?: boolean;
  /** multipart fields instead of a JSON body (`@path` uploads a file) */
  form?: [string, string][];
}

/** The API calls behind a page, folded under "API" with a copy button each. */
export function Curl({ base, calls }: { base: string; calls: CurlCall[] }) {
  return (
    <details class="curl">
      <summary>API</summary>
      {calls.map((call) => {
        const line = curlLine(base, call.method, call.path, call.body, call.auth ?? true, call.form);
        return (
          <div class="curl-call">
            {call.note ? <p class="muted">{call.note}</p> : null}
            <pre>
              <code>{line}</code>
            </pre>
            <button type="button" class="small" data-copy={line}>
              Copy
            </button>
          </div>
        );
      })}
    </details>
  );
}
