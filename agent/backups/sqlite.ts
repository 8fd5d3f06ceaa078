import { z } from "zod";
import { type Built, lazy } from "../../shared/protocol/lazy";
import { PYTHON3, TIMEOUT } from "../docker/pod-bin";

/**
 * SQLite databases under ~/app: found by their 16-byte header (`SQLite format 3\0`), within a
 * bounded walk (depth, entries looked at, databases kept), never following a symbolic link and
 * skipping the preset's excluded directories. Each is copied consistently with SQLite's online
 * backup API (python3's sqlite3 module, in every pod image) into the spool; a file the API cannot
 * open (damaged, locked past the wait) is copied as it is. Runs as pod_user inside the pod, under
 * `python3 -I` (no user site, no PYTHON* variables: the pod's own files cannot change what runs).
 * One JSON line per database on stdout.
 */
export const SQLITE_LIMITS = { depth: 8, entries: 50_000, databases: 20, timeoutS: 600 };

const SCRIPT = `
import json, os, shutil, sqlite3, sys, urllib.parse
app, out, depth, entries, most = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
excluded = set(sys.argv[6:])
MAGIC = b"SQLite format 3\\x00"
seen = 0
found = []
def header(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        return os.read(fd, 16) == MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)
def walk(d, rel, level):
    global seen
    try:
        it = sorted(os.scandir(d), key=lambda e: e.name)
    except OSError:
        return
    for e in it:
        if seen >= entries or len(found) >= most:
            return
        seen += 1
        r = rel + e.name
        if level == 0 and e.name in excluded:
            continue
        try:
            if e.is_dir(follow_symlinks=False):
                if level + 1 < depth:
                    walk(e.path, r + "/", level + 1)
            elif e.is_file(follow_symlinks=False) and e.stat(follow_symlinks=False).st_size >= 512 and header(e.path):
                found.append(r)
        except OSError:
            pass
walk(app, "", 0)
for i, r in enumerate(found, 1):
    src = os.path.join(app, r)
    name = "sqlite-%d.db" % i
    dst = os.path.join(out, name)
    method = "backup"
    try:
        s = sqlite3.connect("file:" + urllib.parse.quote(src) + "?mode=ro", uri=True, timeout=10)
        d = sqlite3.connect(dst)
        with d:
            s.backup(d)
        d.close(); s.close()
    except Exception:
        method = "copy"
        try:
            os.unlink(dst)
        except OSError:
            pass
        with open(src, "rb") as f, open(dst, "wb") as g:
            shutil.copyfileobj(f, g, 1 << 20)
    print(json.dumps({"source": r, "file": name, "bytes": os.path.getsize(dst), "method": method}), flush=True)
`;

export const SqliteCopy = lazy(() =>
  z.object({
    source: z.string().min(1).max(1024),
    file: z.string().regex(/^sqlite-\d{1,3}\.db$/),
    bytes: z.number().int().nonnegative(),
    method: z.enum(["backup", "copy"]),
  }),
);
export type SqliteCopy = Built<typeof SqliteCopy>;

/** argv of the finder: `app` the app root, `out` the spool's databases directory */
export const sqliteArgv = (app: string, out: string, excluded: string[]) => [
  TIMEOUT,
  "-k",
  "5",
  String(SQLITE_LIMITS.timeoutS),
  PYTHON3,
  "-I",
  "-c",
  SCRIPT,
  app,
  out,
  String(SQLITE_LIMITS.depth),
  String(SQLITE_LIMITS.entries),
  String(SQLITE_LIMITS.databases),
  ...excluded,
];

/** the finder's lines; a line that does not parse is an error of the agent's own script */
export function parseSqliteCopies(stdout: string): SqliteCopy[] {
  return stdout
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => SqliteCopy().parse(JSON.parse(l)));
}
