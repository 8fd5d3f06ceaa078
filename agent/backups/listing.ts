import { z } from "zod";
import { BackupManifest } from "../../shared/protocol/backups";
import { type Built, lazy } from "../../shared/protocol/lazy";

/**
 * What a test-restore learns from reading an archive through once, inside the throwaway box
 * (./box.ts): python3's tarfile in stream mode over stdin, nothing extracted except the manifest
 * (at most 1 MiB) and SQLite dumps (into the box's tmpfs, to run `PRAGMA quick_check`; one larger
 * than the scratch space is checked by its header only). Refused: a first member other than
 * `podhost-backup.json`, a member name that is absolute or has a `..` part, a member outside
 * `podhost-backup.json`, `databases/` and `app/`, more than MAX_MEMBERS members, a database the
 * manifest lists that is absent or of another size. One JSON line on stdout.
 */
export const MAX_MEMBERS = 1_000_000;

const SCRIPT = `
import json, os, sqlite3, sys, tarfile
max_members, scratch, scratch_max = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
MAGIC = b"SQLite format 3\\x00"
def done(o):
    sys.stdout.write(json.dumps(o) + "\\n"); sys.stdout.flush(); os._exit(0)
def bad(reason):
    done({"ok": False, "reason": reason})
def shown(name):
    return json.dumps(name[:200])
try:
    tf = tarfile.open(fileobj=sys.stdin.buffer, mode="r|gz")
    manifest = None; n = 0; files = 0; sizes = {}; sqlite = {}
    while True:
        m = tf.next()
        if m is None:
            break
        tf.members.clear()
        n += 1
        if n > max_members:
            bad("the archive has more than %d members" % max_members)
        name = m.name
        parts = name.split("/")
        if name.startswith("/") or ".." in parts or "\\x00" in name:
            bad("unsafe member name " + shown(name))
        if n == 1:
            if name != "podhost-backup.json" or not m.isfile() or m.size > 1 << 20:
                bad("the first member is not podhost-backup.json")
            manifest = json.loads(tf.extractfile(m).read())
            dbs = manifest.get("databases") if isinstance(manifest, dict) else None
            for d in dbs if isinstance(dbs, list) else []:
                if isinstance(d, dict) and d.get("kind") == "sqlite":
                    sqlite[d.get("file")] = None
            continue
        top = parts[0]
        if top == "app":
            files += 1
        elif top == "databases":
            if m.isfile():
                sizes[name] = m.size
                if name in sqlite:
                    f = tf.extractfile(m)
                    head = f.read(16)
                    if head != MAGIC:
                        bad("the sqlite dump %s is not an SQLite database" % shown(name))
                    if m.size <= scratch_max:
                        path = os.path.join(scratch, "check.db")
                        with open(path, "wb") as g:
                            g.write(head)
                            while True:
                                b = f.read(1 << 20)
                                if not b:
                                    break
                                g.write(b)
                        c = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
                        r = c.execute("PRAGMA quick_check").fetchone()
                        c.close()
                        os.unlink(path)
                        sqlite[name] = "quick_check" if r and r[0] == "ok" else "failed"
                        if sqlite[name] == "failed":
                            bad("the sqlite dump %s fails its integrity check" % shown(name))
                    else:
                        sqlite[name] = "header"
            elif name != "databases" and not m.isdir():
                bad("databases/ holds a member that is not a file: " + shown(name))
        else:
            bad("unexpected member " + shown(name))
    if manifest is None:
        bad("the archive is empty")
    done({"ok": True, "manifest": manifest, "files": files, "members": n, "sizes": sizes, "sqlite": sqlite})
except SystemExit:
    raise
except Exception as e:
    bad("the archive cannot be read: %s" % str(e)[:300])
`;

export const Listing = lazy(() =>
  z.discriminatedUnion("ok", [
    z.object({
      ok: z.literal(true),
      manifest: z.unknown(),
      files: z.number().int().nonnegative(),
      members: z.number().int().positive(),
      sizes: z.record(z.string(), z.number().int().nonnegative()),
      sqlite: z.record(z.string(), z.enum(["quick_check", "header"]).nullable()),
    }),
    z.object({ ok: z.literal(false), reason: z.string() }),
  ]),
);
export type Listing = Built<typeof Listing>;

/** argv: the archive on stdin, exactly `bytes` of it (head -c: the end is seen even where an exec's stdin never closes) */
export const listingArgv = (bytes: number, scratch: string, scratchMax: number) => [
  "/bin/bash",
  "-c",
  '/usr/bin/head -c "$1" | /usr/bin/python3 -I -c "$2" "$3" "$4" "$5"',
  "bash",
  String(bytes),
  SCRIPT,
  String(MAX_MEMBERS),
  scratch,
  String(scratchMax),
];

/** The manifest checked against the listing: every database it names is there, with its size. */
export function checkListing(
  listing: Extract<Listing, { ok: true }>,
): { ok: true; manifest: BackupManifest } | { ok: false; reason: string } {
  const manifest = BackupManifest().safeParse(listing.manifest);
  if (!manifest.success) return { ok: false, reason: "podhost-backup.json is not a backup manifest" };
  for (const db of manifest.data.databases) {
    const size = listing.sizes[db.file];
    if (size === undefined)
      return { ok: false, reason: `the database dump ${db.file} named in the manifest is missing` };
    if (size !== db.bytes)
      return {
        ok: false,
        reason: `the database dump ${db.file} holds ${size} bytes, the manifest says ${db.bytes}`,
      };
  }
  return { ok: true, manifest: manifest.data };
}
