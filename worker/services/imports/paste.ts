import type { PresetSlug } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { detectPreset } from "../zip/archive";
import {
  type Artifact,
  type ArtifactFile,
  type ArtifactType,
  escapeHtml,
  slugOf,
  type Transfer,
  textFile,
} from "./artifact";
import { compileReact, compileVue, splitVueSfc } from "./compile";
import { pageTitle } from "./page-read";
import { checkProjectPath } from "./paths";
import type { RuntimeName } from "./runtimes";

/**
 * Pasted source → an artifact whose pod serves something useful for its type: HTML as it is, a React
 * or Vue component built into a page, SVG and Mermaid in a viewer page, code shown highlighted (or
 * run, where the preset can: PHP), a set of files as a project (a `package.json` one is installed and
 * built on the pod). Every generated page escapes the pasted text it shows.
 */

export interface PasteInput {
  body?: string;
  files?: { path: string; content: string }[];
  title?: string;
  source?: string;
  type?: ArtifactType;
  language?: string;
}

/** What the source says it is when `type` is not given; plain string tests, no regex. */
export function detectPasteType(body: string): ArtifactType {
  const head = body.trimStart().slice(0, 2000).toLowerCase();
  const start = head.startsWith("<?xml") ? head.slice(head.indexOf(">") + 1).trimStart() : head;
  if (start.startsWith("<svg")) return "svg";
  if (start.startsWith("<!doctype html") || start.startsWith("<html") || head.includes("<body"))
    return "html";
  if (start.startsWith("<template") || (head.includes("<template") && head.includes("<script"))) return "vue";
  const firstWord = start.slice(0, firstSpace(start));
  if (MERMAID_KEYWORDS.has(firstWord) || start.startsWith("%%{")) return "mermaid";
  if (
    body.includes('from "react"') ||
    body.includes("from 'react'") ||
    (body.includes("export default") && body.includes("return (") && body.includes("</"))
  )
    return "react";
  if (start.startsWith("<")) return "html";
  return "code";
}

/** Index of the first whitespace character (or the length): a plain scan. */
function firstSpace(text: string): number {
  for (let i = 0; i < text.length; i++) if (" \t\r\n\f\v".includes(text.charAt(i))) return i;
  return text.length;
}

const MERMAID_KEYWORDS = new Set([
  "graph",
  "flowchart",
  "sequencediagram",
  "classdiagram",
  "statediagram",
  "statediagram-v2",
  "erdiagram",
  "journey",
  "gantt",
  "pie",
  "quadrantchart",
  "requirementdiagram",
  "gitgraph",
  "mindmap",
  "timeline",
  "sankey-beta",
  "xychart-beta",
  "block-beta",
  "c4context",
  "architecture-beta",
  "kanban",
]);

/**
 * `code` files: the extension a language's source is saved under (the pasted file is kept as is). A
 * Map, so a tenant's `language` is looked up among these names only (`constructor`, `__proto__` …
 * are no keys of it, as they would be of an object literal's prototype).
 */
const EXTENSIONS = new Map<string, string>(
  Object.entries({
    javascript: "js",
    js: "js",
    typescript: "ts",
    ts: "ts",
    python: "py",
    py: "py",
    php: "php",
    ruby: "rb",
    go: "go",
    rust: "rs",
    java: "java",
    c: "c",
    cpp: "cpp",
    "c++": "cpp",
    csharp: "cs",
    "c#": "cs",
    css: "css",
    json: "json",
    yaml: "yaml",
    sql: "sql",
    bash: "sh",
    shell: "sh",
    sh: "sh",
    markdown: "md",
    md: "md",
  }),
);

/**
 * Why `language` cannot be a paste's language, or null. The names an object's prototype carries
 * (`constructor`, `__proto__`, `toString` …) are refused outright; any other name passes the route's
 * pattern and is a hint (unknown ones are shown as plain text).
 */
export function refusedLanguage(language: string): string | null {
  return language in Object.prototype || language.toLowerCase() in Object.prototype
    ? `paste.language: ${language} is not a language name`
    : null;
}

const page = (title: string, head: string, body: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
${head}
</head>
<body>
${body}
</body>
</html>
`;

const transfer = (
  headline: string,
  moves: string[],
  stays: string[] = [],
  notes: string[] = [],
): Transfer => ({
  headline,
  transfers: moves.map((m) => ({ label: m.split(":")[0] ?? m, detail: m })),
  does_not_transfer: stays.map((m) => ({ label: m.split(":")[0] ?? m, detail: m })),
  notes,
});

interface Project {
  type: ArtifactType;
  preset: PresetSlug;
  files: ArtifactFile[];
  transfer: Transfer;
}

/**
 * The vendored runtimes, loaded on first use: their text modules exist only in bundles (wrangler,
 * vitest), so Node tools that load the app (the OpenAPI lint) never reach them.
 */
async function runtimeFiles(name: RuntimeName): Promise<ArtifactFile[]> {
  return (await import("./runtimes")).runtimeFiles(name);
}

export async function pasteProject(paste: PasteInput, title: string): Promise<Result<Project>> {
  if (paste.files && paste.files.length > 0) return filesProject(paste.files);
  const body = paste.body ?? "";
  const type = paste.type ?? detectPasteType(body);
  switch (type) {
    case "html":
      return ok({
        type,
        preset: "static",
        files: [textFile("index.html", body)],
        transfer: transfer("The page is served as pasted", ["index.html: the pasted page"]),
      });
    case "react": {
      const app = compileReact(body);
      if (!app.ok) return app;
      return ok({
        type,
        preset: "static",
        files: [
          textFile(
            "index.html",
            page(
              title,
              "",
              '<div id="root"></div>\n<script src="vendor/react.production.min.js"></script>\n<script src="vendor/react-dom.production.min.js"></script>\n<script src="app.js"></script>',
            ),
          ),
          textFile("app.js", app.value),
          textFile("src/App.jsx", body),
          ...(await runtimeFiles("react")),
        ],
        transfer: transfer(
          "The React component is built into a page with React 18 bundled beside it",
          [
            "src/App.jsx: the pasted component",
            "app.js: the component compiled for the browser",
            "vendor/: React and ReactDOM",
          ],
          [
            "other libraries: imports other than react and react-dom are not bundled; the page names any that is missing",
            "Tailwind and other CSS frameworks: class names stay, their styles are not included",
          ],
        ),
      });
    }
    case "vue": {
      const parts = splitVueSfc(body);
      const app = await compileVue(
        parts.template === null && parts.script === null ? { ...parts, script: body } : parts,
        body,
      );
      if (!app.ok) return app;
      return ok({
        type,
        preset: "static",
        files: [
          textFile(
            "index.html",
            page(
              title,
              '<link rel="stylesheet" href="style.css">',
              '<div id="app"></div>\n<script src="vendor/vue.global.prod.js"></script>\n<script src="app.js"></script>',
            ),
          ),
          textFile("app.js", app.value),
          textFile("style.css", parts.styles.join("\n")),
          textFile("src/App.vue", body),
          ...(await runtimeFiles("vue")),
        ],
        transfer: transfer(
          "The Vue component is built into a page with Vue 3 bundled beside it",
          [
            "src/App.vue: the pasted component",
            "app.js: its script, compiled",
            "style.css: its <style> blocks (not scoped)",
            "vendor/: Vue",
          ],
          ["other libraries: imports other than vue are not bundled"],
        ),
      });
    }
    case "svg": {
      const start = body.trimStart().toLowerCase();
      if (!start.startsWith("<svg") && !(start.startsWith("<?xml") && start.includes("<svg")))
        return fail("bad_request", "paste.body: an svg paste must be an SVG document (starting with <svg)");
      return ok({
        type,
        preset: "static",
        files: [
          textFile(
            "index.html",
            page(
              title,
              "<style>body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f6f6f6}img{max-width:95vw;max-height:95vh}</style>",
              `<img src="image.svg" alt="${escapeHtml(title)}">`,
            ),
          ),
          textFile("image.svg", body),
        ],
        transfer: transfer("The SVG is served with a viewer page", [
          "image.svg: the pasted drawing",
          "index.html: a page showing it",
        ]),
      });
    }
    case "mermaid":
      return ok({
        type,
        preset: "static",
        files: [
          textFile(
            "index.html",
            page(
              title,
              "<style>body{font-family:system-ui,sans-serif;margin:2em}</style>",
              `<pre class="mermaid">${escapeHtml(body)}</pre>\n<script src="vendor/mermaid.min.js"></script>\n<script>mermaid.initialize({ startOnLoad: true, securityLevel: "strict" });</script>`,
            ),
          ),
          textFile("diagram.mmd", body),
          ...(await runtimeFiles("mermaid")),
        ],
        transfer: transfer("The diagram is drawn in the page by Mermaid, bundled beside it", [
          "diagram.mmd: the pasted source",
          "index.html: the viewer page",
          "vendor/: Mermaid",
        ]),
      });
    case "code":
      return codeProject(body, paste.language, title);
    case "multi":
      return fail("bad_request", "paste.files: a multi paste sends its files in paste.files");
  }
}

async function codeProject(
  body: string,
  language: string | undefined,
  title: string,
): Promise<Result<Project>> {
  const lang = (language ?? "").toLowerCase();
  if (lang === "php")
    return ok({
      type: "code",
      preset: "php",
      files: [textFile("index.php", body)],
      transfer: transfer("The PHP code runs as the pod's index.php", ["index.php: the pasted code"]),
    });
  if (lang === "html") return pasteProject({ body, type: "html" }, title);
  const file = `source.${EXTENSIONS.get(lang) ?? "txt"}`;
  const cls =
    lang && EXTENSIONS.has(lang)
      ? ` class="language-${lang === "c++" ? "cpp" : lang === "c#" ? "csharp" : lang}"`
      : "";
  return ok({
    type: "code",
    preset: "static",
    files: [
      textFile(
        "index.html",
        page(
          title,
          '<link rel="stylesheet" href="vendor/highlight.github.min.css">\n<style>body{font-family:system-ui,sans-serif;margin:2em}pre{border:1px solid #ddd;border-radius:6px;overflow:auto}</style>',
          `<h1>${escapeHtml(title)}</h1>\n<p><a href="${file}" download>${file}</a></p>\n<pre><code${cls}>${escapeHtml(body)}</code></pre>\n<script src="vendor/highlight.min.js"></script>\n<script>hljs.highlightAll();</script>`,
        ),
      ),
      textFile(file, body),
      ...(await runtimeFiles("highlight")),
    ],
    transfer: transfer(
      "The code is shown highlighted on the pod's page",
      [`${file}: the pasted code`, "index.html: the page showing it", "vendor/: highlight.js"],
      ["running it: only PHP runs as pasted; other languages are shown, not run"],
    ),
  });
}

function filesProject(files: { path: string; content: string }[]): Result<Project> {
  const out: ArtifactFile[] = [];
  const seen = new Set<string>();
  for (const [i, f] of files.entries()) {
    const path = checkProjectPath(f.path);
    if (!path.ok) return fail("bad_request", `paste.files[${i}].path: ${path.message}`);
    if (seen.has(path.value))
      return fail("bad_request", `paste.files[${i}].path: ${path.value} is given twice`);
    seen.add(path.value);
    out.push(textFile(path.value, f.content));
  }
  const top = [...seen].filter((p) => !p.includes("/"));
  const preset = detectPreset(top);
  if (preset === "static" && !seen.has("index.html")) {
    const list = [...seen].map((p) => `<li><a href="${escapeHtml(p)}">${escapeHtml(p)}</a></li>`).join("\n");
    out.push(textFile("index.html", page("Files", "", `<h1>Files</h1>\n<ul>\n${list}\n</ul>`)));
  }
  return ok({
    type: "multi",
    preset,
    files: out,
    transfer: transfer(
      preset === "nodejs"
        ? "The project is installed and built on the pod (npm install, npm run build when it has one)"
        : `The files are served by a ${preset} pod`,
      [...seen].slice(0, 20).map((p) => `${p}: as pasted`),
      [],
      preset === "static" && !seen.has("index.html")
        ? ["index.html: a list of the files, as none was given"]
        : [],
    ),
  });
}

/** The artifact's title: the given one, else the HTML's <title>-less fallback by type. */
export const defaultTitle = (type: ArtifactType) =>
  ({
    html: "Imported page",
    react: "Imported React component",
    vue: "Imported Vue component",
    svg: "Imported drawing",
    mermaid: "Imported diagram",
    code: "Imported code",
    multi: "Imported project",
  })[type];

/** A paste as an artifact (title given, or the type's default). */
export async function pasteArtifact(paste: PasteInput): Promise<Result<Artifact>> {
  const hasFiles = (paste.files?.length ?? 0) > 0;
  if (!hasFiles && (paste.body ?? "").trim() === "")
    return fail("bad_request", "paste: empty; send paste.body or paste.files with content");
  const refused = paste.language === undefined ? null : refusedLanguage(paste.language);
  if (refused) return fail("bad_request", refused);
  const type: ArtifactType = hasFiles ? "multi" : (paste.type ?? detectPasteType(paste.body ?? ""));
  const given = (paste.title ?? "").trim().slice(0, 200);
  const title = given || (type === "html" ? await pageTitle(paste.body ?? "") : "") || defaultTitle(type);
  const project = await pasteProject({ ...paste, type: hasFiles ? undefined : type }, title);
  if (!project.ok) return project;
  return ok({
    source: "paste",
    source_url: "",
    title,
    slug: slugOf(title),
    ...project.value,
  });
}
