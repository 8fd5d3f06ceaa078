import fitJs from "../../node_modules/@xterm/addon-fit/lib/addon-fit.js";
import xtermCss from "../../node_modules/@xterm/xterm/css/xterm.css";
import xtermJs from "../../node_modules/@xterm/xterm/lib/xterm.js";
import htmxJs from "../../node_modules/htmx.org/dist/htmx.min.js";
import uplotJs from "../../node_modules/uplot/dist/uPlot.iife.min.js";
import uplotCss from "../../node_modules/uplot/dist/uPlot.min.css";
import cardJs from "./assets/card.client.js";
import dashJs from "./assets/dash.client.js";
import styles from "./assets/dashboard.css";
import envJs from "./assets/env.client.js";
import filesJs from "./assets/files.client.js";
import logsJs from "./assets/logs.client.js";
import metricsJs from "./assets/metrics.client.js";
import newPodJs from "./assets/new-pod.client.js";
import overviewJs from "./assets/overview.client.js";
import podDataJs from "./assets/pod-data.client.js";
import revealJs from "./assets/reveal.client.js";
import terminalJs from "./assets/terminal.client.js";

/**
 * Every file the dashboard's pages load, served from the API's own origin (no CDN: nothing a third
 * party can change runs on a signed-in page). Our own script and style, and the npm packages'
 * prebuilt browser files, bundled into the Worker as text (wrangler.toml `[[rules]]`), so their
 * versions are package.json's. Names carry a hash of the content: a page always asks for the
 * bytes it was rendered with, and the files are cached for a year.
 */
const FILES = {
  "dash.js": { text: dashJs, type: "text/javascript" },
  "pod-data.js": { text: podDataJs, type: "text/javascript" },
  "dashboard.css": { text: styles, type: "text/css" },
  "htmx.js": { text: htmxJs, type: "text/javascript" },
  "xterm.js": { text: xtermJs, type: "text/javascript" },
  "xterm-fit.js": { text: fitJs, type: "text/javascript" },
  "xterm.css": { text: xtermCss, type: "text/css" },
  "terminal.js": { text: terminalJs, type: "text/javascript" },
  "uplot.js": { text: uplotJs, type: "text/javascript" },
  "uplot.css": { text: uplotCss, type: "text/css" },
  "reveal.js": { text: revealJs, type: "text/javascript" },
  "files.js": { text: filesJs, type: "text/javascript" },
  "env.js": { text: envJs, type: "text/javascript" },
  "new-pod.js": { text: newPodJs, type: "text/javascript" },
  "logs.js": { text: logsJs, type: "text/javascript" },
  "metrics.js": { text: metricsJs, type: "text/javascript" },
  "card.js": { text: cardJs, type: "text/javascript" },
  "overview.js": { text: overviewJs, type: "text/javascript" },
} as const;

export type AssetName = keyof typeof FILES;

/** FNV-1a, 32 bits: a cache key, not a security boundary (the bytes come from the Worker itself). */
function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0).toString(36);
}

const versions = new Map<string, string>();

/** The URL a page uses for an asset: `/app/assets/<name>?v=<content hash>`. */
export function assetUrl(name: AssetName): string {
  let v = versions.get(name);
  if (!v) {
    v = fnv1a(FILES[name].text);
    versions.set(name, v);
  }
  return `/app/assets/${name}?v=${v}`;
}

export function assetFile(name: string): { text: string; type: string } | undefined {
  return Object.hasOwn(FILES, name) ? FILES[name as AssetName] : undefined;
}
