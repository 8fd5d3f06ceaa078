import type { Component, ErrorCode } from "../../shared/errors";

/**
 * What the Docker engine says when a call fails, told to the tenant in words that name the part that
 * failed, never in the engine's own: those name the host's paths (`/var/lib/docker/volumes/…`, the
 * pod disk's root), container and network ids, and the host's name prefix. The engine's words stay
 * in the agent's log line (../handlers/guard.ts) for the operator.
 *
 * Everything here reads engine text with plain substring checks and one linear scan, never a
 * regular expression: a pod's file and command names are the tenant's and can be in that text.
 */

export interface EngineFailure {
  code: ErrorCode;
  component: Component;
  /** for the tenant, without the `what:` its caller puts in front */
  reason: string;
}

/** The known failures, first match wins; `needles` are lowercase substrings of the engine's message. */
const KNOWN: ReadonlyArray<{ status?: number; needles: string[] } & EngineFailure> = [
  {
    needles: ["oom-killed", "oom killed", "out of memory", "cannot allocate memory"],
    code: "conflict",
    component: "pod",
    reason: "the pod ran out of memory (its plan's memory limit) as the engine started its process",
  },
  {
    needles: ["port is already allocated", "address already in use"],
    code: "unavailable",
    component: "engine",
    reason: "a port the pod needs is already in use on its host (engine)",
  },
  {
    needles: ["non-overlapping", "fully subnetted", "address pool"],
    code: "unavailable",
    component: "engine",
    reason: "the host has no network addresses left for the pod's network (engine: address pools exhausted)",
  },
  {
    needles: ["pool overlaps"],
    code: "conflict",
    component: "engine",
    reason: "the engine could not make the pod's network (its addresses overlap another network's)",
  },
  {
    status: 404,
    needles: ["no such image"],
    code: "unavailable",
    component: "engine",
    reason: "the pod's image is missing on its host (engine: no such image)",
  },
  {
    status: 404,
    needles: ["no such container"],
    code: "not_found",
    component: "pod",
    reason: "the pod's container is missing on its host (engine: no such container)",
  },
  {
    status: 404,
    needles: ["network"],
    code: "not_found",
    component: "engine",
    reason: "the pod's network is missing on its host (engine: no such network)",
  },
  {
    status: 404,
    needles: ["no such volume"],
    code: "not_found",
    component: "engine",
    reason: "a volume of the pod is missing on its host (engine: no such volume)",
  },
  {
    status: 409,
    needles: ["is already in use"],
    code: "conflict",
    component: "engine",
    reason: "an object of that name already exists on the host (engine: name in use)",
  },
  {
    status: 409,
    needles: ["cannot remove a running container"],
    code: "conflict",
    component: "pod",
    reason: "the pod's container is still running (engine: stop it first)",
  },
  {
    status: 409,
    needles: ["is not running", "is paused", "is restarting"],
    code: "conflict",
    component: "pod",
    reason: "the pod's container is not running (engine)",
  },
  {
    needles: ["executable file not found", "exec format error"],
    code: "conflict",
    component: "pod",
    reason: "the engine could not start the pod's process: its command was not found or cannot run",
  },
  {
    needles: ["oci runtime", "runc create failed", "failed to create shim task"],
    code: "internal",
    component: "engine",
    reason: "the engine could not start the pod's process (OCI runtime error)",
  },
];

/**
 * The engine's failure as the tenant is told it: a known one in its own words, any other as the
 * engine's status and its message stripped of host details. `status` is the engine's HTTP status.
 */
export function engineFailure(status: number | undefined, message: string): EngineFailure {
  const text = message.slice(0, 4096).toLowerCase();
  for (const k of KNOWN) {
    if (k.status !== undefined && k.status !== status) continue;
    if (k.needles.some((n) => text.includes(n)))
      return { code: k.code, component: k.component, reason: k.reason };
  }
  const code: ErrorCode = status === 404 ? "not_found" : status === 409 ? "conflict" : "internal";
  return { code, component: "engine", reason: `the engine refused (${withoutHostDetails(message)})` };
}

/** the host's name prefix (`PODHOST_NAME_PREFIX`), left out of what a tenant is told */
let namePrefix: string | undefined;

/** Set once at the agent's start: `<prefix>-` is taken out of engine text told to a tenant. */
export function hideNamePrefix(prefix: string): void {
  namePrefix = prefix;
}

/** characters that end a word of engine text */
const DELIMITERS = new Set([
  " ",
  "\t",
  "\n",
  "\r",
  '"',
  "'",
  "`",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  ",",
  ";",
  "<",
  ">",
  "=",
]);
const HEX = new Set("0123456789abcdefABCDEF");
/** a run of this many hex digits is an id (container, network, image, endpoint) */
const ID_DIGITS = 12;
const MAX_TEXT = 300;

/**
 * `text` without what tells of the host: every word with a `/` in it (a path, a relative one too, an
 * image reference, a URL) becomes `…`, as does every run of 12 or more hex digits (an id), and the
 * host's `<prefix>-` is taken out of names. A word's trailing `:` or `.` stays. At most 300
 * characters; never empty.
 */
export function withoutHostDetails(text: string): string {
  let t = text.slice(0, 4096);
  if (namePrefix) t = t.split(`${namePrefix}-`).join("");
  let out = "";
  let i = 0;
  while (i < t.length) {
    const c = t[i] as string;
    if (DELIMITERS.has(c)) {
      out += c;
      i++;
      continue;
    }
    let end = i;
    while (end < t.length && !DELIMITERS.has(t[end] as string)) end++;
    out += wordWithoutHostDetails(t.slice(i, end));
    i = end;
  }
  out = out.trim();
  if (out.length > MAX_TEXT) out = `${out.slice(0, MAX_TEXT)}…`;
  return out || "no reason given";
}

function wordWithoutHostDetails(word: string): string {
  if (word.includes("/")) {
    const last = word[word.length - 1];
    return last === ":" || last === "." ? `…${last}` : "…";
  }
  // hex runs of ID_DIGITS or more (a container id, alone or inside a word)
  let out = "";
  let run = "";
  for (const c of word) {
    if (HEX.has(c)) {
      run += c;
      continue;
    }
    out += run.length >= ID_DIGITS ? "…" : run;
    run = "";
    out += c;
  }
  return out + (run.length >= ID_DIGITS ? "…" : run);
}
