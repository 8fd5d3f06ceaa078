import type { PresetSlug } from "../../shared/catalog";
import type { Diagnosis, DiagnosisClass, FixAction } from "../../shared/protocol/health";
import { START_FILES } from "../../shared/start-files";
import { type HealthFacts, NODE_OTHER_ENTRIES, type PackageJson } from "./facts";

/**
 * Why a running pod's app does not answer on its port, from the facts gatherHealthFacts gathered. Pure,
 * so every rule is testable with a string. Called only for an app already found unhealthy; the
 * first rule that matches wins, most specific first:
 *
 * 1. out_of_memory — the cgroup's OOM killer struck and the app keeps (re)starting, or the log
 *    says so (V8's "JavaScript heap out of memory", Python's MemoryError). Not fixable here.
 * 2. missing_module — `Cannot find module 'x'` / `Cannot find package 'x'` / `No module named 'x'`
 *    in the last runs' output. Fixable (install the dependencies) when the manifest declares it,
 *    or, for Python, when the dependencies were never installed.
 * 3. missing_start_script — the image found nothing to start. For Node.js fixable when an entry
 *    file exists (package.json `main`, src/, dist/, build/, *.mjs, *.cjs): it becomes `npm start`.
 * 4. port_mismatch — the app runs and listens, but not on the preset's port on the pod's address
 *    (another port, or 127.0.0.1 only). Fixable with a forwarder (see FIX_ACTIONS).
 * 5. crash_loop — the service keeps restarting for no reason above; restarting it fixes nothing.
 * 6. not_responding — none of the above.
 */

export interface ClassifyInput {
  /** the pod's name, for the API paths in the fix text */
  name: string;
  facts: HealthFacts;
  preset: PresetSlug | null;
  port: number;
  now: number;
}

const RECENT_MS = 5 * 60_000;
const CRASH_LOOP_STARTS = 3;
const MAX_LINE = 300;

interface Run {
  kind: "start" | "nothing" | "before";
  at: number | null;
  lines: string[];
}

const MARKER = /^\[podhost\] (\S+) (starting|no start command found)/;

/** app.log cut into the service's runs at the image's "[podhost] <time> starting" lines. */
export function splitRuns(lines: string[]): Run[] {
  const runs: Run[] = [{ kind: "before", at: null, lines: [] }];
  for (const line of lines) {
    const m = MARKER.exec(line);
    if (m) {
      const at = Date.parse(m[1] ?? "");
      runs.push({
        kind: m[2] === "starting" ? "start" : "nothing",
        at: Number.isNaN(at) ? null : at,
        lines: [],
      });
    } else {
      runs[runs.length - 1]?.lines.push(line);
    }
  }
  return runs;
}

/** a line the app printed, not the image's markers nor npm's start banner */
const significant = (line: string) =>
  line.trim() !== "" && !line.startsWith("[podhost]") && !/^> /.test(line);

const cut = (line: string) => (line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line);
const quoteLines = (lines: string[]) => lines.map((l) => `  ${cut(l)}`).join("\n");

function make(
  cls: DiagnosisClass,
  title: string,
  detail: string,
  fix: string,
  confidence: number,
  action?: FixAction,
): Diagnosis {
  return {
    class: cls,
    title: title.slice(0, 300),
    detail: detail.slice(0, 4000),
    fix: fix.slice(0, 1000),
    auto_fixable: action !== undefined,
    confidence,
    ...(action ? { fix_action: action } : {}),
  };
}

/** `@scope/pkg/sub` → `@scope/pkg`, `pkg/sub` → `pkg`; null for a relative or absolute path. */
export function packageOfSpecifier(specifier: string): string | null {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:")) return null;
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? null);
}

function declaredInPackageJson(pkg: PackageJson | null | "invalid", name: string): boolean {
  if (!pkg || pkg === "invalid") return false;
  return [pkg.dependencies, pkg.devDependencies, pkg.optionalDependencies, pkg.peerDependencies].some(
    (deps) => deps && typeof deps === "object" && Object.hasOwn(deps, name),
  );
}

const normalizePy = (name: string) => name.toLowerCase().replace(/[-_.]+/g, "-");

/** The distribution names in a requirements file (`name[extra]>=1; marker` → name). */
export function requirementNames(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.replace(/#.*/, "").trim())
    .filter((l) => l && !l.startsWith("-"))
    .map((l) => normalizePy(/^[A-Za-z0-9][A-Za-z0-9._-]*/.exec(l)?.[0] ?? ""))
    .filter(Boolean);
}

export function classify(input: ClassifyInput): Diagnosis {
  const d = diagnose(input);
  return { ...d, fix: d.fix.replaceAll("{name}", input.name) };
}

function diagnose({ facts, preset, port, now }: ClassifyInput): Diagnosis {
  const runs = splitRuns(facts.logLines);
  const last = runs[runs.length - 1] as Run;
  // The error of a crashing app is in its last run, or the one before when it has just restarted.
  // A run that has printed nothing of its own yet (npm's "> app@1.0.0 start" header at most).
  const said = (r: Run) => r.lines.some(significant);
  const recentRuns = said(last) || runs.length < 2 ? [last] : runs.slice(-2);
  const recent = recentRuns.flatMap((r) => r.lines);
  const starts = runs.filter((r) => r.kind === "start" && r.at !== null && r.at >= now - RECENT_MS).length;
  const { status } = facts;
  const up = status.state === "run";
  const restarting = !up || starts >= CRASH_LOOP_STARTS;
  const node = preset === "nodejs" || (preset === null && facts.files.has("package.json"));
  const python = preset === "python";
  const service = facts.service;

  // 1. memory
  const heapLine = [...recent].reverse().find((l) => /JavaScript heap out of memory|\bMemoryError\b/.test(l));
  const killed = facts.oomKills > 0 && (restarting || starts >= 2 || (status.seconds ?? 0) < 120);
  if (heapLine || killed) {
    const evidence = [
      ...(killed
        ? [
            `The kernel killed a process of the pod for exceeding its memory limit (${facts.oomKills} time(s) since the pod started).`,
          ]
        : []),
      ...(heapLine ? [`The app's log says:\n${quoteLines([heapLine])}`] : []),
    ];
    return make(
      "out_of_memory",
      "The app runs out of memory",
      evidence.join("\n"),
      "Move the pod to a plan with more memory (POST /api/pods/{name}/resize) or make the app use less " +
        "(for Node.js a lower --max-old-space-size). Restarting does not help.",
      heapLine && killed ? 0.95 : heapLine ? 0.85 : 0.75,
    );
  }

  // 2. a module the app imports is not installed
  if (service === "app") {
    for (const line of [...recent].reverse()) {
      const nodeMissing = /Cannot find (?:module|package) '([^']+)'/.exec(line);
      const pyMissing = /No module named '?([A-Za-z0-9_.]+)'?/.exec(line);
      if (nodeMissing?.[1]) {
        const pkg = packageOfSpecifier(nodeMissing[1]);
        if (!pkg) {
          return make(
            "missing_module",
            `The app imports a file that does not exist: ${cut(nodeMissing[1])}`,
            `The app's log says:\n${quoteLines([line])}`,
            "Upload the missing file (or fix the import path), then restart the app.",
            0.85,
          );
        }
        const declared = declaredInPackageJson(facts.packageJson, pkg);
        return declared
          ? make(
              "missing_module",
              `Dependency "${pkg}" is not installed`,
              `The app's log says:\n${quoteLines([line])}\npackage.json lists "${pkg}", but ${
                facts.files.has("node_modules") ? "node_modules lacks it" : "there is no node_modules"
              }.`,
              "Install the dependencies (npm install) and restart the app: POST /api/pods/{name}/diagnosis/fix does both.",
              facts.files.has("node_modules") ? 0.85 : 0.95,
              "install_dependencies",
            )
          : make(
              "missing_module",
              `Module "${pkg}" is not installed and not in package.json`,
              `The app's log says:\n${quoteLines([line])}\n${
                facts.packageJson ? `package.json does not list "${pkg}".` : "There is no package.json."
              }`,
              `Add "${pkg}" to the dependencies in package.json (npm install ${pkg}), then reload the pod.`,
              0.8,
            );
      }
      if (pyMissing?.[1]) {
        const module = pyMissing[1].split(".")[0] ?? pyMissing[1];
        const listed =
          facts.requirements !== null && requirementNames(facts.requirements).includes(normalizePy(module));
        const neverInstalled = facts.requirements !== null && !facts.files.has(".venv");
        const fixable = listed || neverInstalled;
        return make(
          "missing_module",
          `Python module "${module}" is not installed`,
          `The app's log says:\n${quoteLines([line])}\n${
            facts.requirements === null
              ? "There is no requirements.txt."
              : listed
                ? `requirements.txt lists it${facts.files.has(".venv") ? "" : ", but ~/app/.venv does not exist yet"}.`
                : `requirements.txt does not list "${module}"${neverInstalled ? " (and nothing was installed yet)" : ""}.`
          }`,
          fixable
            ? "Install the requirements into ~/app/.venv (pip install -r requirements.txt) and restart the app: POST /api/pods/{name}/diagnosis/fix does both."
            : `Add the package that provides "${module}" to requirements.txt, then reload the pod.`,
          listed ? 0.9 : neverInstalled ? 0.7 : 0.8,
          fixable ? "install_dependencies" : undefined,
        );
      }
    }
  }

  // 3. nothing to start
  if (service === "app" && (node || python)) {
    const custom = facts.files.has(".pod/start");
    const pkg = facts.packageJson;
    const hasStartScript = !!(
      pkg &&
      pkg !== "invalid" &&
      pkg.scripts &&
      typeof pkg.scripts.start === "string"
    );
    const defaults = node ? START_FILES.nodejs : START_FILES.python;
    const nothing =
      last.kind === "nothing" ||
      (!custom && !(node && hasStartScript) && !defaults.some((f) => facts.files.has(f)));
    if (nothing) {
      if (python) {
        return make(
          "missing_start_script",
          "The app has no start command",
          `~/app has none of ${START_FILES.python.join(", ")} and there is no ~/.pod/start.`,
          "Rename your entry file to app.py, or put the command that starts the app in ~/.pod/start " +
            "(e.g. gunicorn -b 0.0.0.0:$PORT app:app), then restart the app.",
          0.9,
        );
      }
      const entry = facts.mainEntry ?? NODE_OTHER_ENTRIES.find((f) => facts.files.has(f)) ?? null;
      const fixable = entry !== null && pkg !== null && pkg !== "invalid";
      return make(
        "missing_start_script",
        "The app has no start script",
        `${pkg === null ? "There is no package.json" : pkg === "invalid" ? "package.json is not valid JSON" : 'package.json has no "start" script'}, ~/app has none of ${START_FILES.nodejs.join(", ")} and there is no ~/.pod/start.${
          entry ? ` ${entry} looks like the app's entry.` : ""
        }`,
        fixable
          ? `Add "start": "node ${entry}" to the scripts of package.json and restart: POST /api/pods/{name}/diagnosis/fix does both.`
          : 'Add a "start" script to package.json (e.g. "node server.js"), or put the start command in ~/.pod/start.',
        fixable ? 0.9 : 0.85,
        fixable ? "add_start_script" : undefined,
      );
    }
  }

  // 4. listening, but not where the ingress looks
  if (up && (status.seconds ?? 0) >= 2) {
    const mine = facts.ownershipKnown ? facts.listeners.filter((l) => l.byService) : facts.listeners;
    const loopbackOnly = mine.find((l) => l.port === port && l.loopback);
    const others = mine.filter((l) => l.port !== port);
    if (loopbackOnly) {
      return make(
        "port_mismatch",
        `The app listens on 127.0.0.1:${port} only`,
        `Port ${port} is bound to the loopback address, so the pod's web traffic cannot reach it.`,
        `Make the app listen on 0.0.0.0 (all addresses), or apply the fix: a small forwarder from the pod's address to 127.0.0.1:${port} (worker podhost-port-forward).`,
        0.9,
        "forward_port",
      );
    }
    const target = others[0];
    if (target) {
      return make(
        "port_mismatch",
        `The app listens on port ${target.port}, not ${port}`,
        `Web traffic goes to port ${port} (the PORT variable the app is given), but the app listens on ${others
          .map((l) => l.port)
          .join(", ")}.`,
        `Make the app listen on process.env.PORT (${port}), or apply the fix: a small forwarder from port ${port} to ${target.port} (worker podhost-port-forward; remove it once the app uses PORT).`,
        others.length === 1 && facts.ownershipKnown ? 0.9 : 0.7,
        "forward_port",
      );
    }
  }

  // 5. restarting over and over for a reason we cannot name
  // The app's own words: npm's epilogue, stack frames and the Node.js version line are noise here.
  const errorLines = recent
    .filter(significant)
    .filter((l) => !/^(npm (error|ERR!|WARN|notice)|\s+at |Node\.js v\d)/.test(l))
    .slice(-5);
  const logName = service === "app" ? "~/logs/app.log" : "~/logs/error.log";
  if (restarting) {
    return make(
      "crash_loop",
      service === "app" ? "The app keeps crashing" : "The web server keeps crashing",
      `The ${service} service ${up ? `started ${starts} times in the last 5 minutes` : `is ${status.state}`}.${
        errorLines.length ? ` Its last output:\n${quoteLines(errorLines)}` : ""
      }`,
      `Read ${logName} (GET /api/pods/{name}/logs), fix the error in the app, then reload the pod. Restarting alone will not help.`,
      errorLines.length ? 0.8 : 0.6,
    );
  }

  // 6. up, but silent
  const listensNowhere =
    up && (facts.ownershipKnown ? facts.listeners.every((l) => !l.byService) : facts.listeners.length === 0);
  return make(
    "not_responding",
    `The ${service === "app" ? "app" : "web server"} does not answer on port ${port}`,
    `${listensNowhere ? "It runs but listens on no TCP port." : `The ${service} service is ${status.state}.`}${
      errorLines.length ? ` Its last output:\n${quoteLines(errorLines)}` : ""
    }`,
    `Check ${logName} (GET /api/pods/{name}/logs); the app must listen on 0.0.0.0 and the port in PORT (${port}).`,
    listensNowhere ? 0.5 : 0.3,
  );
}
