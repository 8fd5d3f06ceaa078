import { transform } from "sucrase";
import { fail, ok, type Result } from "../../../shared/errors";

/**
 * Single-file components compiled in the Worker (sucrase: JSX and TypeScript stripped, ES imports
 * turned into `require` calls) into a script the page runs against the vendored runtime
 * (./runtimes.ts): `require` answers only the runtime's own modules, so nothing is fetched when the
 * page is viewed. sucrase is a tokenizer, not a regex engine: hostile source costs linear time.
 */

const transformModule = (source: string, what: string): Result<string> => {
  try {
    return ok(
      transform(source, {
        transforms: ["jsx", "typescript", "imports"],
        jsxRuntime: "classic",
        production: true,
        disableESTransforms: true,
      }).code,
    );
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return fail("bad_request", `paste: the ${what} does not compile: ${message.slice(0, 300)}`);
  }
};

/** The page's module loader: the runtime's modules by name; anything else says what is missing. */
const loader = (modules: Record<string, string>) => `var __modules = {${Object.entries(modules)
  .map(([name, global]) => `${JSON.stringify(name)}: ${global}`)
  .join(", ")}};
function require(name) {
  if (Object.prototype.hasOwnProperty.call(__modules, name)) return __modules[name];
  throw new Error("this page bundles " + Object.keys(__modules).join(", ") + " only; \\"" + name + "\\" is not available");
}
function __fail(error) {
  var box = document.createElement("pre");
  box.setAttribute("style", "color:#b00020;white-space:pre-wrap;padding:1em");
  box.textContent = "The imported component could not run: " + (error && error.message ? error.message : String(error));
  document.body.appendChild(box);
  if (window.console) console.error(error);
}`;

/** The component a module exports: its default, else `App`, else its only function export. */
const PICK = `function __component(m) {
  if (m && m.default) return m.default;
  if (m && m.App) return m.App;
  var fns = Object.keys(m || {}).filter(function (k) { return typeof m[k] === "function"; });
  return fns.length === 1 ? m[fns[0]] : undefined;
}`;

/** A module with no exports of its own gets `App` exported when it defines one (a bare artifact). */
const exportingApp = (source: string) =>
  source.includes("export ")
    ? source
    : `${source}\n;export default typeof App !== "undefined" ? App : undefined;\n`;

/** A React component (JSX or TSX) as `app.js` mounting it into `#root`. */
export function compileReact(source: string): Result<string> {
  const compiled = transformModule(exportingApp(source), "React component");
  if (!compiled.ok) return compiled;
  return ok(`(function () {
"use strict";
var React = window.React;
${loader({
  react: "window.React",
  "react-dom": "window.ReactDOM",
  "react-dom/client": "window.ReactDOM",
})}
${PICK}
var module = { exports: {} };
var exports = module.exports;
try {
  (function (require, module, exports, React) {
${compiled.value}
  })(require, module, exports, React);
  var Component = __component(module.exports);
  if (typeof Component !== "function") throw new Error("the module exports no component (export default one)");
  window.ReactDOM.createRoot(document.getElementById("root")).render(React.createElement(Component));
} catch (error) {
  __fail(error);
}
})();
`);
}

export interface VueParts {
  template: string | null;
  script: string | null;
  setup: boolean;
  styles: string[];
}

/**
 * A Vue single-file component's blocks, found by plain string search (no regex meets the tenant's
 * text): the outermost `<template>`, the first `<script>`, every `<style>`.
 */
export function splitVueSfc(source: string): VueParts {
  const block = (tag: string, from: number, outermost: boolean) => {
    const open = source.indexOf(`<${tag}`, from);
    if (open < 0) return null;
    const openEnd = source.indexOf(">", open);
    if (openEnd < 0) return null;
    const closeTag = `</${tag}>`;
    const close = outermost ? source.lastIndexOf(closeTag) : source.indexOf(closeTag, openEnd);
    if (close < openEnd) return null;
    return {
      attrs: source.slice(open + tag.length + 1, openEnd),
      body: source.slice(openEnd + 1, close),
      end: close,
    };
  };
  const template = block("template", 0, true);
  const script = block("script", 0, false);
  const styles: string[] = [];
  for (let at = 0, s = block("style", 0, false); s; s = block("style", at, false)) {
    styles.push(s.body);
    at = s.end + 1;
  }
  return {
    template: template?.body ?? null,
    script: script?.body ?? null,
    setup: script ? script.attrs.includes("setup") : false,
    styles,
  };
}

/**
 * `<script setup>` compiled by Vue's own SFC compiler (its self-contained browser build, loaded only
 * for such components), the template inlined as its render function: a module importing from "vue".
 */
async function compileScriptSetup(source: string): Promise<Result<string>> {
  try {
    const sfc = await import("@vue/compiler-sfc/dist/compiler-sfc.esm-browser.js");
    const { descriptor, errors } = sfc.parse(source, { filename: "App.vue" });
    if (errors.length > 0)
      return fail(
        "bad_request",
        `paste: the Vue component does not parse: ${String(errors[0]?.message).slice(0, 300)}`,
      );
    return ok(sfc.compileScript(descriptor, { id: "app", inlineTemplate: true }).content);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return fail(
      "bad_request",
      `paste: the Vue component's <script setup> does not compile: ${message.slice(0, 300)}`,
    );
  }
}

/**
 * A Vue component as `app.js` mounting it into `#app`. A plain `<script>` (options or `setup()`)
 * goes through the module transform and the template is compiled in the browser by Vue's full
 * build; `<script setup>` is compiled here by Vue's SFC compiler first.
 */
export async function compileVue(parts: VueParts, source: string): Promise<Result<string>> {
  let script = parts.script ?? "export default {};";
  let template = parts.template ?? "";
  if (parts.setup) {
    const setup = await compileScriptSetup(source);
    if (!setup.ok) return setup;
    script = setup.value;
    template = ""; // inlined into the setup's render function
  }
  const compiled = transformModule(script, "Vue component's <script>");
  if (!compiled.ok) return compiled;
  return ok(`(function () {
"use strict";
${loader({ vue: "window.Vue" })}
${PICK}
var module = { exports: {} };
var exports = module.exports;
try {
  (function (require, module, exports) {
${compiled.value}
  })(require, module, exports);
  var component = __component(module.exports) || module.exports.default || {};
  var template = ${JSON.stringify(template)};
  if (template.trim() && !component.template && !component.render) component.template = template;
  window.Vue.createApp(component).mount("#app");
} catch (error) {
  __fail(error);
}
})();
`);
}
