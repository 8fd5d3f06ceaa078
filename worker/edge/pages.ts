/**
 * The edge's own answers (docs/edge.md "What a visitor sees"): a small branded page instead of a
 * raw nginx error or a bare status. Self-contained (inline style, no script, no asset), so it shows
 * whatever is down; `no-store`, so a cache never keeps the outage once the pod is back.
 */
export type EdgePage = "unknown" | "stopped" | "starting" | "away" | "unavailable";

const PAGES: Record<EdgePage, { status: number; title: string; text: string }> = {
  unknown: {
    status: 404,
    title: "No pod here",
    text: "No pod answers at this address. Check the name, or create the pod first.",
  },
  stopped: {
    status: 503,
    title: "This pod is stopped",
    text: "Its owner has stopped it. It answers again once it is started.",
  },
  starting: {
    status: 503,
    title: "This pod is not ready yet",
    text: "It is being created or deployed. Try again in a few seconds.",
  },
  away: {
    status: 503,
    title: "This pod is unreachable right now",
    text: "The machine it runs on is not answering. It is usually back within a minute.",
  },
  unavailable: {
    status: 502,
    title: "This pod's app is not answering",
    text: "The pod runs, but its app did not answer. If it is yours, look at its logs.",
  },
};

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

export function edgePage(page: EdgePage, hostname: string): Response {
  const p = PAGES[page];
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${p.title} · podhost</title>
<style>
body{margin:0;min-height:100vh;display:grid;place-items:center;font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1b1f24}
main{max-width:32rem;padding:2rem;text-align:center}
.brand{font-weight:700;letter-spacing:.02em;color:#4f46e5}
h1{font-size:1.4rem;margin:.5rem 0}
code{background:#e8eaee;padding:.1rem .35rem;border-radius:.25rem}
@media (prefers-color-scheme:dark){body{background:#111418;color:#e6e8eb}code{background:#23272e}}
</style></head>
<body><main><div class="brand">podhost</div><h1>${p.title}</h1><p>${p.text}</p>
<p><code>${escapeHtml(hostname)}</code> · ${p.status}</p></main></body></html>
`;
  return new Response(html, {
    status: p.status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "x-podhost-edge": page,
      ...(p.status === 503 ? { "retry-after": "5" } : {}),
    },
  });
}
