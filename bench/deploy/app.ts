/**
 * bench/deploy's app: a small Node server answering its version, with one dependency (`ms@2.1.3`,
 * vendored so that both sides install it offline) and a lockfile, so both sides run `npm ci`.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import type { Files } from "../../test/support/git-server";
import { DEP, npmEnv, run } from "./settings";

export const serverJs = (version: string) => `const http = require("http");
const ms = require("ms");
http.createServer((req, res) => res.end("${version} " + ms(90000)))
  .listen(Number(process.env.PORT), "0.0.0.0");
`;

/** package.json, the lockfile and the vendored tarball of the one dependency (fetched once). */
export async function appBase(work: string): Promise<Files> {
  const dir = path.join(work, "lock");
  await mkdir(path.join(dir, "vendor"), { recursive: true });
  const env = npmEnv(path.join(work, "npm-cache"));
  await run("npm", ["pack", `${DEP.name}@${DEP.version}`, "--pack-destination", "vendor", "--silent"], {
    cwd: dir,
    env,
  });
  const tgz = `vendor/${DEP.name}-${DEP.version}.tgz`;
  const pkg = JSON.stringify(
    {
      name: "bench-app",
      version: "1.0.0",
      private: true,
      scripts: { start: "node server.js" },
      dependencies: { [DEP.name]: `file:${tgz}` },
    },
    null,
    2,
  );
  await writeFile(path.join(dir, "package.json"), pkg);
  await run("npm", ["install", "--package-lock-only", "--ignore-scripts", "--silent"], { cwd: dir, env });
  return {
    "package.json": pkg,
    "package-lock.json": await readFile(path.join(dir, "package-lock.json"), "utf8"),
    [tgz]: await readFile(path.join(dir, tgz)),
  };
}
