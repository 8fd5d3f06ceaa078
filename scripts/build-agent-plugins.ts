import { readFile } from "node:fs/promises";
import { builtinModules } from "node:module";
import path from "node:path";
import type { Plugin } from "esbuild";

/**
 * CommonJS modules of the agent's dependencies that are required at load time but only called on
 * paths the agent never takes; in the bundle each such `require` is answered by a function that loads
 * the real module on its first call, so its code is in the file but not evaluated (nor what it
 * requires in turn):
 * - dockerode's `./session` (BuildKit sessions over gRPC: @grpc/grpc-js, @grpc/proto-loader,
 *   protobufjs), used only by `buildImage` with a session;
 * - docker-modem's `./ssh` (the ssh2 client), used only for an engine reached over `ssh://`; the
 *   agent's SSH gateway loads ssh2 itself when its first client connects (agent/ssh/ssh2.ts).
 * Both modules export one function, which the wrapper stands in for.
 */
const LAZY: { importer: RegExp; request: string; file: string }[] = [
  { importer: /[\\/]dockerode[\\/]lib[\\/]docker\.js$/, request: "./session", file: "session.js" },
  { importer: /[\\/]docker-modem[\\/]lib[\\/]modem\.js$/, request: "./ssh", file: "ssh.js" },
];
const REAL = "podhost-lazy-real:";

export const lazyRequires: Plugin = {
  name: "lazy-requires",
  setup(b) {
    b.onResolve({ filter: /^\.\/(session|ssh)$/ }, (args) => {
      const lazy = LAZY.find((l) => l.request === args.path && l.importer.test(args.importer));
      if (!lazy) return undefined;
      return { path: path.join(path.dirname(args.importer), lazy.file), namespace: "lazy-require" };
    });
    b.onLoad({ filter: /.*/, namespace: "lazy-require" }, (args) => ({
      contents: `module.exports = function () {
  return require(${JSON.stringify(REAL + args.path)}).apply(this, arguments);
};`,
      resolveDir: path.dirname(args.path),
      loader: "js",
    }));
    b.onResolve({ filter: new RegExp(`^${REAL}`) }, (args) => ({ path: args.path.slice(REAL.length) }));
  },
};

/**
 * docker-modem formats every request it sends with `util.inspect(options, { showHidden: true, depth:
 * null })` for a debug line, whether that line is printed or not (DEBUG=modem). The agent's periodic
 * watch makes engine requests every tick: the formatting was ~1 MB of garbage a tick with 50 pods
 * (a sampling heap profile of the compiled agent). In the bundle the line is formatted only when
 * it is printed; the build fails if docker-modem no longer has the line as written here.
 */
const MODEM_DEBUG_LINE = "debug('Sending: %s', util.inspect(options, {";

export const quietDockerModem: Plugin = {
  name: "quiet-docker-modem",
  setup(b) {
    b.onLoad({ filter: /[\\/]docker-modem[\\/]lib[\\/]modem\.js$/ }, async (args) => {
      const source = await readFile(args.path, "utf8");
      if (!source.includes(MODEM_DEBUG_LINE))
        throw new Error(`${args.path}: the request debug line to guard is gone (docker-modem changed)`);
      return {
        contents: source.replace(MODEM_DEBUG_LINE, `if (debug.enabled) ${MODEM_DEBUG_LINE}`),
        loader: "js",
      };
    });
  },
};

/**
 * zod's `locales` namespace (its error messages in ~50 languages, ~300 KB of the bundle's 1.2 MB)
 * is exported as `z.locales` and `core.locales`, so importing `z` keeps all of it; the agent never
 * switches language (English is registered by zod's schemas themselves, from `locales/en.js`). In
 * the bundle the namespace is empty: ~6 ms less to compile at start and ~0.5 MB less RSS.
 */
export const zodWithoutLocales: Plugin = {
  name: "zod-without-locales",
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]v4[\\/](classic|core)[\\/]/.test(args.importer)
        ? { path: "zod-locales", namespace: "zod-locales" }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "zod-locales" }, () => ({ contents: "export {};", loader: "js" }));
  },
};

/**
 * Node's built-ins as CommonJS `require`s, not ES imports. An ES import of a built-in goes through
 * its ES module facade, which reads every export once, getters included: `node:http`'s `WebSocket`,
 * `CloseEvent` and `MessageEvent` are lazy getters that load undici (fetch, WebSocket, HTTP/2), so
 * one `import … from "node:http"` evaluated all of undici at start, which the agent never calls:
 * ~10 MB of RSS and ~40–90 ms of the start (a bundle of that import alone, beside one of `require`).
 * `require` returns the exports object itself; a named import becomes a property read at its use.
 */
const BUILTINS = new Set(builtinModules.map((m) => m.replace(/^node:/, "")));

export const builtinsByRequire: Plugin = {
  name: "builtins-by-require",
  setup(b) {
    b.onResolve({ filter: /^(node:)?[a-z_]+(\/[a-z_]+)?$/ }, (args) => {
      if (args.kind !== "import-statement" && args.kind !== "dynamic-import") return undefined;
      const name = args.path.replace(/^node:/, "");
      if (!BUILTINS.has(name)) return undefined;
      return { path: `node:${name}`, namespace: "builtin-require" };
    });
    b.onLoad({ filter: /.*/, namespace: "builtin-require" }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: "js",
    }));
  },
};

/**
 * esbuild's `__toESM`, which every ES import of a CommonJS module goes through (Node's built-ins
 * among them, see builtinsByRequire), makes a new view of the module's exports per importing file:
 * an object with one getter closure per export. The agent's files import `node:fs/promises` 21 times,
 * `node:stream` 17, `node:crypto` 9 (~5,000 getters for 121 imports): ~0.4 MB of heap from the load
 * on. The views are read-only (an import binding cannot be assigned), so one per module serves every
 * importer: in the bundle `__toESM` keeps the view it made for a module and hands it out again. The
 * build fails if esbuild's helper no longer reads as written here.
 */
const TO_ESM =
  '__toESM=(mod,isNodeMode,target)=>(target=mod!=null?__create(__getProtoOf(mod)):{},__copyProps(isNodeMode||!mod||!mod.__esModule?__defProp(target,"default",{value:mod,enumerable:!0}):target,mod))';
const SHARED_TO_ESM = `${TO_ESM.replace("__toESM=", "__toESMView=")},__esmViews=new WeakMap,__toESM=(mod,isNodeMode)=>{if(mod==null||typeof mod!="object"&&typeof mod!="function")return __toESMView(mod,isNodeMode);let views=__esmViews.get(mod);views||__esmViews.set(mod,views=[]);return views[isNodeMode?1:0]??=__toESMView(mod,isNodeMode)}`;

export function shareEsmViews(code: string): string {
  if (!code.includes(TO_ESM)) throw new Error("esbuild's __toESM helper changed: update shareEsmViews");
  return code.replace(TO_ESM, SHARED_TO_ESM);
}
