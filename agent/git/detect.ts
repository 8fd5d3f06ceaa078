import type { DetectedCommands } from "../../shared/protocol/git";
import type { NpmStart } from "./candidate";

/**
 * What a repository's root files say about installing, building and starting it. Pure: the caller
 * reads the files (the commit's tree on the host, `git cat-file`) and passes them in. Used by
 * `repo.inspect` and by every deploy; the pod's preset wins over the guess for which image builds,
 * and the user's build command over the detected one.
 */

type Preset = DetectedCommands["preset"];

export interface RepoFiles {
  /** names at the root of the tree */
  names: ReadonlySet<string>;
  /** the text of the root files detection reads (package.json, Procfile, …); absent when not read */
  text: Partial<Record<DetectFile, string | null>>;
}

/** the root files whose contents detection reads */
export const DETECT_FILES = ["package.json", "Procfile", "composer.json", "pyproject.toml"] as const;
export type DetectFile = (typeof DETECT_FILES)[number];

/** which package managers the images have besides npm (none today: images/README.md) */
export interface ImageTools {
  yarn: boolean;
  pnpm: boolean;
}

export const DEFAULT_PORTS: Record<Preset, number> = { static: 8080, php: 8080, nodejs: 3000, python: 8000 };

const NODE_ENTRIES = ["server.js", "index.js", "app.js", "main.js"];
const PY_ENTRIES = ["app.py", "main.py", "server.py"];

interface PackageJson {
  scripts: Record<string, string>;
  deps: Set<string>;
}

function parsePackageJson(text: string | null | undefined): PackageJson | null {
  if (!text) return null;
  try {
    const raw: unknown = JSON.parse(text);
    if (!raw || typeof raw !== "object") return null;
    const o = raw as Record<string, unknown>;
    const scripts: Record<string, string> = {};
    if (o.scripts && typeof o.scripts === "object") {
      for (const [k, v] of Object.entries(o.scripts as Record<string, unknown>)) {
        if (typeof v === "string") scripts[k] = v;
      }
    }
    const deps = new Set<string>();
    for (const field of ["dependencies", "devDependencies"]) {
      const d = o[field];
      if (d && typeof d === "object") for (const k of Object.keys(d)) deps.add(k);
    }
    return { scripts, deps };
  } catch {
    return null;
  }
}

/** package.json's start script with the name, version and hooks npm gives it; null without one. */
export function npmStartOf(text: string | null | undefined): NpmStart | null {
  if (!text) return null;
  try {
    const raw: unknown = JSON.parse(text);
    if (!raw || typeof raw !== "object") return null;
    const o = raw as Record<string, unknown>;
    const scripts = (o.scripts && typeof o.scripts === "object" ? o.scripts : {}) as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === "string" ? v.replaceAll("\0", "") : "");
    const script = str(scripts.start);
    if (!script) return null;
    return {
      script,
      name: str(o.name),
      version: str(o.version),
      hooks: Boolean(scripts.prestart || scripts.poststart),
    };
  } catch {
    return null;
  }
}

/** The `web:` line of a Procfile (the first one), trimmed; null when there is none. */
export function procfileWeb(text: string | null | undefined): string | null {
  if (!text) return null;
  for (const line of text.split("\n")) {
    if (line.startsWith("web:")) {
      const cmd = line.slice(4).trim();
      return cmd.length > 0 ? cmd.slice(0, 2000) : null;
    }
  }
  return null;
}

/** The preset the files suggest (for `repo.inspect`; a deploy uses the pod's). */
export function guessPreset(files: RepoFiles): Preset {
  const has = (n: string) => files.names.has(n);
  if (has("package.json")) {
    const pkg = parsePackageJson(files.text["package.json"]);
    // A front-end project that only builds static files still needs Node to build: nodejs.
    if (pkg || !has("index.html")) return "nodejs";
  }
  if (has("requirements.txt") || has("pyproject.toml") || PY_ENTRIES.some(has)) return "python";
  if (has("composer.json") || has("index.php")) return "php";
  if (NODE_ENTRIES.some(has)) return "nodejs";
  return "static";
}

/** Install, build and start commands and the port for `preset` (the pod's, or guessed). */
export function detectCommands(
  files: RepoFiles,
  opts: { preset?: Preset; buildCommand?: string | null; tools?: ImageTools } = {},
): DetectedCommands {
  const preset = opts.preset ?? guessPreset(files);
  const tools = opts.tools ?? { yarn: false, pnpm: false };
  const has = (n: string) => files.names.has(n);
  const web = procfileWeb(files.text.Procfile);
  let install: string | null = null;
  let build: string | null = null;
  let start: string | null = null;

  if (preset === "nodejs" || (preset === "static" && has("package.json"))) {
    const pkg = parsePackageJson(files.text["package.json"]);
    if (has("package.json")) {
      if (has("package-lock.json") || has("npm-shrinkwrap.json")) install = "npm ci";
      else if (has("yarn.lock") && tools.yarn) install = "yarn install --frozen-lockfile";
      else if (has("pnpm-lock.yaml") && tools.pnpm) install = "pnpm install --frozen-lockfile";
      else install = "npm install";
    }
    if (pkg?.scripts.build) build = "npm run build";
    if (preset === "nodejs") {
      if (web) start = web;
      else if (pkg?.scripts.start) start = "npm start";
      else if (pkg?.deps.has("next")) start = "npx next start";
      else {
        const entry = NODE_ENTRIES.find(has);
        if (entry) start = `node ${entry}`;
      }
    } else if (!build) {
      // A static pod with a package.json but nothing to build serves the files as they are.
      install = null;
    }
  } else if (preset === "python") {
    if (has("requirements.txt"))
      install =
        "python3 -m venv .venv && .venv/bin/pip install --disable-pip-version-check -r requirements.txt";
    else if (has("pyproject.toml"))
      install = "python3 -m venv .venv && .venv/bin/pip install --disable-pip-version-check .";
    if (web) start = web;
    else {
      const entry = PY_ENTRIES.find(has);
      if (entry) start = `python ${entry}`;
    }
  } else if (preset === "php") {
    if (has("composer.json")) install = "composer install --no-interaction --no-progress --no-dev";
  }

  const userBuild = opts.buildCommand?.trim();
  if (userBuild) build = userBuild;
  return {
    preset,
    install_command: install,
    build_command: build,
    start_command: start,
    port: DEFAULT_PORTS[preset],
  };
}

/**
 * The files whose contents decide the installed dependencies: when their bytes (and the install
 * command) equal the serving release's, its dependencies are reused instead of installed again.
 */
export const DEPENDENCY_FILES: Record<Preset, string[]> = {
  nodejs: ["package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"],
  static: ["package.json", "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml"],
  python: ["requirements.txt", "pyproject.toml"],
  php: ["composer.json", "composer.lock"],
};

/** The directory the install fills, reused between releases with equal dependency files. */
export const DEPENDENCY_DIR: Record<Preset, string | null> = {
  nodejs: "node_modules",
  static: "node_modules",
  python: ".venv",
  php: "vendor",
};
