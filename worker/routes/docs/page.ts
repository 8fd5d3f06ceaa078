import type { OpenAPIHono } from "@hono/zod-openapi";

type OpenAPIObject = ReturnType<OpenAPIHono["getOpenAPI31Document"]>;

const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[ch] ?? ch,
  );

type Json = Record<string, unknown>;

/** Summaries are written with Markdown-style `code` spans; show them as code (input already escaped). */
const inlineCode = (html: string) => html.replace(/`([^`]+)`/g, "<code>$1</code>");

/** A compact, self-contained reference page (no CDN: it must work offline and behind strict CSPs). */
export function renderDocsPage(doc: OpenAPIObject): string {
  const byTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) {
      const tag = ((op.tags as string[] | undefined) ?? ["Other"])[0] ?? "Other";
      const section = byTag.get(tag) ?? [];
      section.push(renderOperation(method, path, op, (ref) => resolveRef(doc, ref)));
      byTag.set(tag, section);
    }
  }
  const nav = [...byTag.keys()].map((t) => `<a href="#${escapeHtml(t)}">${escapeHtml(t)}</a>`).join(" · ");
  const sections = [...byTag.entries()]
    .map(
      ([tag, ops]) => `<section id="${escapeHtml(tag)}"><h2>${escapeHtml(tag)}</h2>${ops.join("")}</section>`,
    )
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.info.title)} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:980px;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
code,pre{font:13px ui-monospace,monospace}pre{background:#f5f5f7;padding:.6rem;overflow:auto;border-radius:6px}
.op{border:1px solid #ddd;border-radius:8px;margin:.8rem 0;padding:.2rem .9rem}
.m{display:inline-block;min-width:4.2em;font-weight:700;text-transform:uppercase}
.get{color:#0a7}.post{color:#06c}.put{color:#a60}.delete{color:#c22}.patch{color:#85c}
summary{cursor:pointer;padding:.4rem 0}.lock{color:#888;font-size:12px}
</style></head><body>
<h1>${escapeHtml(doc.info.title)}</h1><p>${escapeHtml(doc.info.description ?? "")}</p>
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1)</p>
<nav>${nav}</nav>${sections}</body></html>`;
}

function resolveRef(doc: OpenAPIObject, schema: unknown): unknown {
  const ref = (schema as Json | undefined)?.$ref;
  if (typeof ref !== "string") return schema;
  return (doc.components?.schemas as Json | undefined)?.[ref.replace("#/components/schemas/", "")] ?? schema;
}

function renderOperation(method: string, path: string, op: Json, resolve: (s: unknown) => unknown): string {
  // `[]` is public; an empty requirement `{}` among the others makes the credential optional.
  const security = op.security as Json[] | undefined;
  const secured = !!security?.length && security.every((req) => Object.keys(req).length > 0);
  const params = ((op.parameters as Json[] | undefined) ?? [])
    .map((p) => `<li><code>${escapeHtml(String(p.name))}</code> (${escapeHtml(String(p.in))})</li>`)
    .join("");
  const body = (op.requestBody as Json | undefined)?.content as Record<string, Json> | undefined;
  const bodySchema = body ? resolve(Object.values(body)[0]?.schema) : undefined;
  const responses = Object.entries((op.responses as Record<string, Json> | undefined) ?? {})
    .map(
      ([status, r]) =>
        `<li><code>${escapeHtml(status)}</code> ${escapeHtml(String(r.description ?? ""))}</li>`,
    )
    .join("");
  return `<details class="op"><summary><span class="m ${escapeHtml(method)}">${escapeHtml(method)}</span> <code>${escapeHtml(path)}</code> — ${inlineCode(escapeHtml(String(op.summary ?? "")))}${secured ? ' <span class="lock">auth</span>' : ""}</summary>
${params ? `<h4>Parameters</h4><ul>${params}</ul>` : ""}
${bodySchema ? `<h4>Request body</h4><pre>${escapeHtml(JSON.stringify(bodySchema, null, 2))}</pre>` : ""}
<h4>Responses</h4><ul>${responses}</ul></details>`;
}
