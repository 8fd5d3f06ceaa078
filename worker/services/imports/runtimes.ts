import highlightJs from "../../../node_modules/@highlightjs/cdn-assets/highlight.min.js";
import highlightCss from "../../../node_modules/@highlightjs/cdn-assets/styles/github.min.css";
import mermaidJs from "../../../node_modules/mermaid/dist/mermaid.min.js";
import reactJs from "../../../node_modules/react/umd/react.production.min.js";
import reactDomJs from "../../../node_modules/react-dom/umd/react-dom.production.min.js";
import vueJs from "../../../node_modules/vue/dist/vue.global.prod.js";
import { type ArtifactFile, textFile } from "./artifact";

/**
 * The browser runtimes an imported page loads, copied into the pod beside it (`vendor/`): nothing is
 * fetched from a CDN when the page is viewed, and pods need no registry. They are the npm packages'
 * own prebuilt browser files, bundled into the Worker as text modules (wrangler.toml `[[rules]]`
 * type "Text"; types in ./vendor-text.d.ts), so the versions are package.json's.
 */
export const RUNTIMES = {
  react: [
    { path: "vendor/react.production.min.js", text: reactJs },
    { path: "vendor/react-dom.production.min.js", text: reactDomJs },
  ],
  vue: [{ path: "vendor/vue.global.prod.js", text: vueJs }],
  mermaid: [{ path: "vendor/mermaid.min.js", text: mermaidJs }],
  highlight: [
    { path: "vendor/highlight.min.js", text: highlightJs },
    { path: "vendor/highlight.github.min.css", text: highlightCss },
  ],
} as const;

export type RuntimeName = keyof typeof RUNTIMES;

/**
 * Encoded once per isolate and shared by every import (read-only): Mermaid alone is 5.5 MB, and an
 * isolate has 128 MB, so a copy per import would not survive a few imports at once.
 */
const encoded = new Map<RuntimeName, ArtifactFile[]>();

export function runtimeFiles(name: RuntimeName): ArtifactFile[] {
  let files = encoded.get(name);
  if (!files) {
    files = RUNTIMES[name].map((f) => textFile(f.path, f.text));
    encoded.set(name, files);
  }
  return files;
}
