/**
 * What grew between two heap snapshots of the Worker's isolate (bench/soak's `--heap-dir`): per
 * constructor (a node's type and name, as DevTools' summary groups them) the count and self size in
 * each, the largest growths first, and for each grower what holds its objects (the retaining object's
 * constructor and the edge's name) in the later snapshot.
 *
 *   tsx bench/soak/heap-diff.ts <earlier.heapsnapshot> <later.heapsnapshot> [--top 15]
 */
import { readFile } from "node:fs/promises";
import { parseArgs } from "node:util";
import { fmt, formatTable } from "../stats";

interface Snapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[]];
      edge_fields: string[];
      edge_types: [string[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

interface Parsed {
  /** per node (by ordinal): its group key */
  keys: string[];
  /** per group: count and self size */
  groups: Map<string, { count: number; bytes: number }>;
  /** per group: "retainer's group · edge" → count, for the objects of that group */
  retainers(group: string): Map<string, number>;
}

async function parse(file: string): Promise<Parsed> {
  const s = JSON.parse(await readFile(file, "utf8")) as Snapshot;
  const { node_fields, node_types, edge_fields, edge_types } = s.snapshot.meta;
  const nf = node_fields.length;
  const ef = edge_fields.length;
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ["type", "name", "self_size", "edge_count"].map((f) =>
    node_fields.indexOf(f),
  ) as [number, number, number, number];
  const [eTypeAt, eNameAt, eToAt] = ["type", "name_or_index", "to_node"].map((f) =>
    edge_fields.indexOf(f),
  ) as [number, number, number];
  const nodeTypes = node_types[0];
  const edgeTypes = edge_types[0];
  const count = s.nodes.length / nf;
  const keys: string[] = new Array(count);
  const groups = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < count; i++) {
    const type = nodeTypes[s.nodes[i * nf + typeAt] as number] ?? "?";
    const name = s.strings[s.nodes[i * nf + nameAt] as number] ?? "?";
    // objects and closures by constructor / function name; strings, code, arrays by their type alone
    const key = type === "object" || type === "closure" ? `${type} ${name.slice(0, 60)}` : `(${type})`;
    keys[i] = key;
    const g = groups.get(key) ?? { count: 0, bytes: 0 };
    g.count++;
    g.bytes += s.nodes[i * nf + sizeAt] as number;
    groups.set(key, g);
  }
  return {
    keys,
    groups,
    retainers(group) {
      const out = new Map<string, number>();
      let edge = 0;
      for (let i = 0; i < count; i++) {
        const edges = s.nodes[i * nf + edgeCountAt] as number;
        for (let e = 0; e < edges; e++, edge++) {
          const to = (s.edges[edge * ef + eToAt] as number) / nf;
          if (keys[to] !== group) continue;
          const eType = edgeTypes[s.edges[edge * ef + eTypeAt] as number];
          if (eType === "weak") continue;
          const raw = s.edges[edge * ef + eNameAt] as number;
          const eName = eType === "element" || eType === "hidden" ? `[${eType}]` : (s.strings[raw] ?? "?");
          const k = `${keys[i]} · ${eName}`;
          out.set(k, (out.get(k) ?? 0) + 1);
        }
      }
      return out;
    },
  };
}

async function main() {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { top: { type: "string", default: "15" } },
  });
  const [a, b] = positionals;
  if (!a || !b) throw new Error("usage: heap-diff.ts <earlier.heapsnapshot> <later.heapsnapshot> [--top N]");
  const top = Number(values.top);
  const before = await parse(a);
  const after = await parse(b);
  const total = (p: Parsed) => [...p.groups.values()].reduce((s, g) => s + g.bytes, 0);
  console.log(`self size: ${fmt(total(before) / 1048576, 2)} MB → ${fmt(total(after) / 1048576, 2)} MB`);
  const keys = new Set([...before.groups.keys(), ...after.groups.keys()]);
  const rows = [...keys]
    .map((k) => {
      const x = before.groups.get(k) ?? { count: 0, bytes: 0 };
      const y = after.groups.get(k) ?? { count: 0, bytes: 0 };
      return { k, x, y, d: y.bytes - x.bytes };
    })
    .sort((p, q) => q.d - p.d)
    .slice(0, top);
  console.log(
    formatTable(
      ["constructor", "count before", "count after", "KB before", "KB after", "KB grown"],
      rows.map((r) => [
        r.k,
        String(r.x.count),
        String(r.y.count),
        fmt(r.x.bytes / 1024, 0),
        fmt(r.y.bytes / 1024, 0),
        fmt(r.d / 1024, 0),
      ]),
    ),
  );
  for (const r of rows.slice(0, 5)) {
    const held = [...after.retainers(r.k).entries()].sort((p, q) => q[1] - p[1]).slice(0, 6);
    console.log(`\n${r.k}: held by`);
    for (const [k, n] of held) console.log(`  ${n} × ${k}`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
