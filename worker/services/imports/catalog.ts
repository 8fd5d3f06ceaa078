import type { Transfer } from "./artifact";

/**
 * Everything the import catalog says, as data in one place: the routes into a pod (GET
 * /api/imports/sources), the AI assistants whose shared artifacts are fetched, and the platforms
 * whose code cannot be fetched, each with its manual guide (the 422 body and the catalog's
 * `platforms`). Hosts match exactly or as a parent domain (`x.wixsite.com` is `wixsite.com`'s).
 */

export interface ImportRoute {
  route: string;
  name: string;
  description: string;
  transfer: Transfer;
}

export interface Guide {
  slug: string;
  name: string;
  summary: string;
  route: string;
  automatic: false;
  steps: { text: string }[];
  transfer: Transfer;
  docs: { text: string; href: string }[];
}

export interface Platform extends Guide {
  host_examples: string[];
  /** host names (and their subdomains) that are this platform's */
  hosts: string[];
}

export interface Assistant {
  /** `detected_source` and the artifact's `source` */
  slug: string;
  name: string;
  hosts: string[];
  /** path prefixes of a shared artifact on those hosts; empty: any path */
  paths: string[];
}

const item = (label: string, detail: string) => ({ label, detail });

export const IMPORT_ROUTES: ImportRoute[] = [
  {
    route: "url",
    name: "Live site snapshot",
    description:
      'POST /api/imports {url, mode: "site", max_pages | single_page}: same-origin pages and their assets are fetched, links rewritten to relative paths, and served as a static pod.',
    transfer: {
      headline: "A static copy of what the site serves",
      transfers: [
        item("pages", "same-origin HTML pages, up to max_pages"),
        item("assets", "same-origin images, stylesheets, scripts"),
      ],
      does_not_transfer: [
        item("server code", "only what the site sends to browsers is copied"),
        item("other origins", "assets on other hosts stay links to them"),
      ],
      notes: ["Fetch budget: 75 s for a site snapshot."],
    },
  },
  {
    route: "artifact",
    name: "AI assistant artifact",
    description:
      'POST /api/imports {url} with a shared artifact\'s link (or mode: "artifact" for any page carrying one): its source becomes a page of the right type (html, react, vue, svg, mermaid, code).',
    transfer: {
      headline: "The artifact's source, built into a page",
      transfers: [
        item("source", "the artifact's code, kept under src/ or as its own file"),
        item("runtime", "React, Vue, Mermaid or highlight.js bundled beside the page"),
      ],
      does_not_transfer: [
        item("conversation", "the chat around the artifact"),
        item("other libraries", "imports beyond the bundled runtime"),
      ],
      notes: ["Fetch budget: 25 s."],
    },
  },
  {
    route: "paste",
    name: "Pasted source",
    description:
      "POST /api/imports {paste: {body | files, title, type, language}}: a single file or a set of files becomes a pod; a project with package.json is installed and built on it.",
    transfer: {
      headline: "Exactly what was pasted, plus a page to show it",
      transfers: [item("files", "every pasted file, at its path")],
      does_not_transfer: [],
      notes: [],
    },
  },
  {
    route: "zip",
    name: "ZIP archive",
    description:
      "POST /api/pods/from-zip (multipart `zip`): the archive is unpacked into the new pod (docs/zip.md).",
    transfer: {
      headline: "The archive's files",
      transfers: [item("files", "everything in the archive")],
      does_not_transfer: [],
      notes: [],
    },
  },
  {
    route: "repository",
    name: "Git repository",
    description:
      "POST /api/pods/from-repo {repo_url}: cloned, built and deployed, with deploys on push (docs/git.md).",
    transfer: {
      headline: "The repository's branch, built",
      transfers: [item("code", "the branch's files"), item("deploys", "a push deploys again")],
      does_not_transfer: [],
      notes: [],
    },
  },
];

export const ASSISTANTS: Assistant[] = [
  {
    slug: "claude",
    name: "Claude",
    hosts: ["claude.ai", "claude.site"],
    paths: ["/public/artifacts/", "/artifacts/"],
  },
  {
    slug: "chatgpt",
    name: "ChatGPT",
    hosts: ["chatgpt.com", "chat.openai.com"],
    paths: ["/canvas/shared/", "/share/"],
  },
  {
    slug: "gemini",
    name: "Gemini",
    hosts: ["gemini.google.com", "g.co"],
    paths: ["/share/", "/gemini/share/"],
  },
  { slug: "v0", name: "v0", hosts: ["v0.dev", "v0.app"], paths: ["/chat/", "/r/"] },
  { slug: "grok", name: "Grok", hosts: ["grok.com"], paths: ["/share/"] },
  { slug: "deepseek", name: "DeepSeek", hosts: ["chat.deepseek.com"], paths: ["/share/"] },
];

const exportTransfer = (what: string): Transfer => ({
  headline: `Export from ${what}, then import the files`,
  transfers: [item("files", "what the export contains, through a ZIP or a repository")],
  does_not_transfer: [item("hosting features", "the platform's own forms, databases and editors stay on it")],
  notes: [],
});

const platform = (p: Omit<Platform, "automatic" | "transfer"> & { transfer?: Transfer }): Platform => ({
  ...p,
  automatic: false,
  transfer: p.transfer ?? exportTransfer(p.name),
});

export const PLATFORMS: Platform[] = [
  platform({
    slug: "wix",
    name: "Wix",
    summary: "Wix sites are built in Wix's editor and cannot be exported as code.",
    route: "url",
    steps: [
      {
        text: 'Wix has no code export: snapshot the published site instead with mode "site" (a static copy).',
      },
      { text: "Or rebuild the pages and import them as a ZIP or a paste." },
    ],
    docs: [
      {
        text: "Wix: exporting your site",
        href: "https://support.wix.com/en/article/exporting-your-wix-site",
      },
    ],
    host_examples: ["example.wixsite.com", "www.wix.com"],
    hosts: ["wixsite.com", "wix.com", "wixstudio.io"],
  }),
  platform({
    slug: "squarespace",
    name: "Squarespace",
    summary: "Squarespace exports content (XML), not a site's code.",
    route: "url",
    steps: [
      { text: 'Snapshot the published site with mode "site" for a static copy.' },
      { text: "Or export the content (Settings → Import & Export) and rebuild it from a ZIP." },
    ],
    docs: [
      {
        text: "Squarespace: exporting your site",
        href: "https://support.squarespace.com/hc/en-us/articles/206566687",
      },
    ],
    host_examples: ["example.squarespace.com"],
    hosts: ["squarespace.com"],
  }),
  platform({
    slug: "webflow",
    name: "Webflow",
    summary: "Webflow's code export is a ZIP you download from the designer.",
    route: "zip",
    steps: [
      { text: "In the Webflow designer, open Export code and download the ZIP." },
      { text: "Create the pod from it: POST /api/pods/from-zip with the archive as `zip`." },
    ],
    docs: [
      { text: "Webflow: code export", href: "https://help.webflow.com/hc/en-us/articles/33961386739347" },
    ],
    host_examples: ["example.webflow.io"],
    hosts: ["webflow.io", "webflow.com"],
  }),
  platform({
    slug: "framer",
    name: "Framer",
    summary: "Framer sites are hosted by Framer; there is no code export.",
    route: "url",
    steps: [{ text: 'Snapshot the published site with mode "site" for a static copy.' }],
    docs: [{ text: "Framer help", href: "https://www.framer.com/help/" }],
    host_examples: ["example.framer.website", "example.framer.app"],
    hosts: ["framer.website", "framer.app", "framer.com"],
  }),
  platform({
    slug: "replit",
    name: "Replit",
    summary: "A Replit project's code lives in its workspace: download it or push it to a repository.",
    route: "repository",
    steps: [
      { text: "In the Repl, open the Files menu and choose Download as ZIP, then POST /api/pods/from-zip." },
      { text: "Or connect the Repl to a git repository and use POST /api/pods/from-repo." },
    ],
    docs: [{ text: "Replit docs", href: "https://docs.replit.com/" }],
    host_examples: ["replit.com/@user/project", "project.user.repl.co"],
    hosts: ["replit.com", "repl.co", "replit.app", "replit.dev"],
  }),
  platform({
    slug: "codesandbox",
    name: "CodeSandbox",
    summary: "A sandbox's files are downloaded from its editor or pushed to a repository.",
    route: "zip",
    steps: [
      { text: "In the sandbox, choose Download Sandbox (a ZIP), then POST /api/pods/from-zip." },
      { text: "Or export it to GitHub and use POST /api/pods/from-repo." },
    ],
    docs: [{ text: "CodeSandbox docs", href: "https://codesandbox.io/docs" }],
    host_examples: ["codesandbox.io/s/abc123", "abc123.csb.app"],
    hosts: ["codesandbox.io", "csb.app"],
  }),
  platform({
    slug: "stackblitz",
    name: "StackBlitz",
    summary: "A StackBlitz project is downloaded from its editor.",
    route: "zip",
    steps: [{ text: "In the project, choose Download Project (a ZIP), then POST /api/pods/from-zip." }],
    docs: [{ text: "StackBlitz docs", href: "https://developer.stackblitz.com/" }],
    host_examples: ["stackblitz.com/edit/project"],
    hosts: ["stackblitz.com", "stackblitz.io", "bolt.new"],
  }),
  platform({
    slug: "lovable",
    name: "Lovable",
    summary: "Lovable projects sync to a GitHub repository.",
    route: "repository",
    steps: [
      { text: "Connect the project to GitHub from Lovable's editor." },
      { text: "Create the pod with POST /api/pods/from-repo and the repository's URL." },
    ],
    docs: [{ text: "Lovable: GitHub integration", href: "https://docs.lovable.dev/integrations/github" }],
    host_examples: ["example.lovable.app", "lovable.dev/projects/abc"],
    hosts: ["lovable.app", "lovable.dev"],
  }),
  platform({
    slug: "glitch",
    name: "Glitch",
    summary: "A Glitch project is exported from its editor.",
    route: "zip",
    steps: [{ text: "Tools → Import/Export → Download project, then POST /api/pods/from-zip." }],
    docs: [{ text: "Glitch help", href: "https://help.glitch.com/" }],
    host_examples: ["example.glitch.me"],
    hosts: ["glitch.me", "glitch.com"],
  }),
];

/** Whether `host` is `domain` or under it: plain string comparison. */
const under = (host: string, domain: string) => host === domain || host.endsWith(`.${domain}`);

export function findPlatform(url: URL): Platform | undefined {
  const host = url.hostname.toLowerCase();
  return PLATFORMS.find((p) => p.hosts.some((h) => under(host, h)));
}

export function findAssistant(url: URL): Assistant | undefined {
  const host = url.hostname.toLowerCase();
  return ASSISTANTS.find(
    (a) =>
      a.hosts.some((h) => under(host, h)) &&
      (a.paths.length === 0 || a.paths.some((p) => url.pathname.startsWith(p))),
  );
}

/** A guide as the API shows it (the catalog's host list is internal). */
export const guideOf = ({ hosts: _hosts, host_examples: _examples, ...guide }: Platform): Guide => guide;
