import { execFile, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

/**
 * A smart-HTTP git server on 127.0.0.1 for tests: the real `git http-backend` (CGI) behind a small
 * Node HTTP server, bare repositories in a temporary directory, optionally behind a token (HTTP
 * basic auth, any user name, the token as password; 401 otherwise). Helpers create a repository
 * and push commits to it with the real `git` client.
 */

const run = promisify(execFile);

/** git's environment for the test's own commands: no user or system config */
const GIT_ENV = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  HOME: tmpdir(),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.test",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.test",
  LC_ALL: "C",
};

export const git = (args: string[], cwd?: string) =>
  run("git", args, { cwd, env: GIT_ENV, maxBuffer: 64 * 1024 * 1024 }).then((r) => r.stdout.trim());

/** file path → content (null deletes; `{ link }` makes a symlink) */
export type Files = Record<string, string | Buffer | null | { link: string }>;

export interface GitServer {
  /** `http://127.0.0.1:<port>` */
  base: string;
  /** the clone URL of a repository */
  url(repo: string): string;
  /** Authorization headers the server saw (to check what was sent) */
  authHeaders: string[];
  /** a bare repository with a first commit of `files` on `branch` (default main); its sha */
  createRepo(repo: string, files: Files, opts?: { branch?: string; message?: string }): Promise<string>;
  /** a commit changing `files` (on top of the branch's tip) pushed to `branch`; its sha */
  commit(repo: string, files: Files, opts?: { branch?: string; message?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function startGitServer(opts: { token?: string } = {}): Promise<GitServer> {
  const root = await mkdtemp(join(tmpdir(), "git-server-"));
  const repos = join(root, "repos");
  const work = join(root, "work");
  await mkdir(repos);
  await mkdir(work);
  const authHeaders: string[] = [];

  const server: Server = createServer((req, res) => {
    const auth = req.headers.authorization;
    if (auth) authHeaders.push(auth);
    if (opts.token && !authorized(auth, opts.token)) {
      res.writeHead(401, { "www-authenticate": 'Basic realm="git"', "content-type": "text/plain" });
      res.end("authentication required\n");
      return;
    }
    cgi(req, res, repos);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  const base = `http://127.0.0.1:${port}`;

  const commit: GitServer["commit"] = async (repo, files, o = {}) => {
    const branch = o.branch ?? "main";
    const dir = join(work, repo);
    // The work tree is the source of truth: each branch starts from wherever HEAD is.
    if (await git(["rev-parse", "-q", "--verify", "HEAD"], dir).catch(() => "")) {
      await git(["checkout", "-q", "-B", branch], dir);
    }
    await writeFiles(dir, files);
    await git(["add", "-A"], dir);
    await git(["commit", "-q", "--allow-empty", "-m", o.message ?? "change"], dir);
    await git(["push", "-q", "-f", join(repos, `${repo}.git`), `HEAD:refs/heads/${branch}`], dir);
    return git(["rev-parse", "HEAD"], dir);
  };

  return {
    base,
    url: (repo) => `${base}/${repo}.git`,
    authHeaders,
    async createRepo(repo, files, o = {}) {
      const bare = join(repos, `${repo}.git`);
      const branch = o.branch ?? "main";
      await git(["init", "-q", "--bare", "-b", branch, bare]);
      await git(["config", "http.receivepack", "true"], bare);
      const dir = join(work, repo);
      await git(["init", "-q", "-b", branch, dir]);
      return commit(repo, files, { branch, message: o.message ?? "first" });
    },
    commit,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}

function authorized(header: string | undefined, token: string): boolean {
  if (!header?.startsWith("Basic ")) return false;
  const decoded = Buffer.from(header.slice(6), "base64").toString("utf8");
  return decoded.slice(decoded.indexOf(":") + 1) === token;
}

async function writeFiles(dir: string, files: Files) {
  for (const [name, content] of Object.entries(files)) {
    const path = join(dir, name);
    await rm(path, { recursive: true, force: true });
    if (content === null) continue;
    await mkdir(dirname(path), { recursive: true });
    if (typeof content === "object" && !Buffer.isBuffer(content)) {
      await run("ln", ["-s", content.link, path]);
    } else {
      await writeFile(path, content);
    }
  }
}

/** `git http-backend` as CGI: request headers in, "Status:" and headers then the body out. */
function cgi(req: IncomingMessage, res: ServerResponse, projectRoot: string) {
  const url = new URL(req.url ?? "/", "http://localhost");
  const child = spawn("git", ["http-backend"], {
    env: {
      ...GIT_ENV,
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: "1",
      REQUEST_METHOD: req.method ?? "GET",
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      REMOTE_ADDR: "127.0.0.1",
      REMOTE_USER: "test",
      GIT_PROTOCOL: String(req.headers["git-protocol"] ?? ""),
      HTTP_CONTENT_ENCODING: String(req.headers["content-encoding"] ?? ""),
    },
    stdio: ["pipe", "pipe", "ignore"],
  });
  req.pipe(child.stdin);
  child.stdin.on("error", () => undefined);
  let head = Buffer.alloc(0);
  let headersDone = false;
  child.stdout.on("data", (chunk: Buffer) => {
    if (headersDone) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    let end = head.indexOf("\r\n\r\n");
    let sep = 4;
    if (end < 0) {
      end = head.indexOf("\n\n");
      sep = 2;
    }
    if (end < 0) return;
    headersDone = true;
    let status = 200;
    for (const line of head.subarray(0, end).toString("latin1").split(/\r?\n/)) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const name = line.slice(0, colon).trim();
      const value = line.slice(colon + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else res.setHeader(name, value);
    }
    res.statusCode = status;
    res.write(head.subarray(end + sep));
  });
  child.stdout.on("end", () => res.end());
  child.on("error", () => {
    res.statusCode = 500;
    res.end();
  });
}
