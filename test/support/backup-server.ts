import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm, stat, unlink } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

/**
 * The control plane's two backup byte routes as the agent sees them (`PUT`/`GET
 * /agent/backups/{id}`, host token), on 127.0.0.1, storing bodies as files in a temp dir: so the
 * agent's own store code runs unmodified in tests. Like the Worker, a PUT answers 201 with the
 * count and SHA-256 of what it stored, and an interrupted body is not kept.
 */
export interface BackupServer {
  url: string;
  token: string;
  dir: string;
  fileOf(id: string): string;
  /** what a stored archive is, as a verify or restore command names it (hashed streaming) */
  expected(id: string): Promise<{ backupId: string; bytes: number; sha256: string }>;
  /** answer every PUT with this sha256 instead of the real one (a lying or broken store) */
  lie: string | null;
  /** a slow store: a GET holds its last `tail` bytes back for `ms` (a gzip's last 8 are its trailer) */
  stall: { tail: number; ms: number } | null;
  close(): Promise<void>;
}

/** a fresh backup id */
export const newBackupId = () => `bk_${Math.random().toString(36).slice(2, 12)}x`;

/** streamed: a test's own memory must not hide or fake the agent's */
async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

export async function startBackupServer(): Promise<BackupServer> {
  const dir = await mkdtemp(path.join(tmpdir(), "podhost-backups-"));
  const token = `agent-${Math.random().toString(36).slice(2)}`;
  const fileOf = (id: string) => path.join(dir, `${id}.tar.gz`);
  const state = { lie: null as string | null, stall: null as { tail: number; ms: number } | null };
  const server: Server = createServer((req, res) => {
    const m = /^\/agent\/backups\/(bk_[A-Za-z0-9]{8,40})$/.exec(req.url ?? "");
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) return answer(401, { error: "unauthorized" });
    if (!m?.[1]) return answer(404, { error: "no such backup" });
    const file = fileOf(m[1]);
    if (req.method === "PUT") {
      const hash = createHash("sha256");
      let bytes = 0;
      const count = new Transform({
        transform(chunk: Buffer, _e, done) {
          bytes += chunk.length;
          hash.update(chunk);
          done(null, chunk);
        },
      });
      const part = `${file}.part`;
      pipeline(req, count, createWriteStream(part))
        .then(async () => {
          const { rename } = await import("node:fs/promises");
          await rename(part, file);
          answer(201, { bytes, sha256: state.lie ?? hash.digest("hex") });
        })
        .catch(async () => {
          await unlink(part).catch(() => undefined);
          if (!res.headersSent) answer(400, { error: "body broke off" });
        });
      return;
    }
    if (req.method === "GET") {
      stat(file).then(
        (s) => {
          res.writeHead(200, { "content-type": "application/gzip", "content-length": String(s.size) });
          const stall = state.stall;
          if (!stall || s.size <= stall.tail) {
            pipeline(createReadStream(file), res).catch(() => undefined);
            return;
          }
          const cut = s.size - stall.tail;
          pipeline(createReadStream(file, { end: cut - 1 }), res, { end: false })
            .then(() => new Promise((r) => setTimeout(r, stall.ms)))
            .then(() => pipeline(createReadStream(file, { start: cut }), res))
            .catch(() => undefined);
        },
        () => answer(404, { error: "no such backup" }),
      );
      return;
    }
    answer(405, { error: "method" });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  const port = typeof addr === "object" && addr ? addr.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    dir,
    fileOf,
    expected: async (backupId) => {
      const file = fileOf(backupId);
      return { backupId, bytes: (await stat(file)).size, sha256: await sha256Of(file) };
    },
    get lie() {
      return state.lie;
    },
    set lie(v) {
      state.lie = v;
    },
    get stall() {
      return state.stall;
    },
    set stall(v) {
      state.stall = v;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
