import path from "node:path";
import type { Plugin } from "esbuild";

const REAL_SESSION = "podhost-lazy:dockerode-session";

/**
 * dockerode's docker.js requires `./session` (BuildKit sessions over gRPC: @grpc/grpc-js,
 * @grpc/proto-loader, protobufjs) at load time, though only `buildImage` with a session ever calls
 * it. In the bundle that `require` is answered by a wrapper that loads the real module on its first
 * call, so the gRPC stack is in the file but never evaluated by an agent that builds no images.
 */
export const lazyDockerodeSession: Plugin = {
  name: "lazy-dockerode-session",
  setup(b) {
    b.onResolve({ filter: /^\.\/session$/ }, (args) => {
      if (!/[\\/]dockerode[\\/]lib[\\/]docker\.js$/.test(args.importer)) return undefined;
      return { path: path.join(path.dirname(args.importer), "session.js"), namespace: "lazy-session" };
    });
    b.onLoad({ filter: /.*/, namespace: "lazy-session" }, (args) => ({
      contents: `module.exports = function withSession() {
  return require(${JSON.stringify(REAL_SESSION)}).apply(this, arguments);
};`,
      resolveDir: path.dirname(args.path),
      loader: "js",
    }));
    b.onResolve({ filter: new RegExp(`^${REAL_SESSION}$`) }, (args) => ({
      path: path.join(args.resolveDir, "session.js"),
    }));
  },
};
