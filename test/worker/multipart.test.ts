import { describe, expect, it } from "vitest";
import { type FormPart, MultipartError, multipartBoundary, readMultipart } from "../../worker/lib/multipart";

/**
 * The streaming multipart reader inside workerd: bodies written by hand and by workerd's own FormData
 * encoder, fed in every chunking that could split a delimiter, checked byte for byte; malformed
 * bodies; and the streaming itself (backpressure, cancel, errors, speed).
 */

const encoder = new TextEncoder();
const BOUNDARY = "----b0undary";
const TRUNCATED = /ended before its closing boundary/;

function concat(...pieces: (string | Uint8Array)[]): Uint8Array {
  const arrays = pieces.map((p) => (typeof p === "string" ? encoder.encode(p) : p));
  const out = new Uint8Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

/** Deterministic pseudo-random bytes (xorshift): plenty of CR, LF and "-" among them. */
function noise(n: number, seed = 2463534242): Uint8Array {
  const out = new Uint8Array(n);
  let x = seed;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Content that looks like a delimiter without being one. */
const TRICKY = concat(
  "\r\n--",
  `--${BOUNDARY}`,
  `\n--${BOUNDARY}\r\n`,
  `\r--${BOUNDARY}\r\n`,
  `\r\n-${BOUNDARY}`,
  `\r\n--${BOUNDARY.slice(0, -1)}x\r\n`,
  "\r\n\r\n",
  noise(3000),
  "\r",
);

/** Where to cut a body into chunks: after each of these many bytes, in turn. */
type Chunking = { name: string; sizes: (body: Uint8Array, boundary?: string) => number[] };

/** Every "--boundary" (delimiter or look-alike) cut `offset` bytes after the CRLF that may precede it. */
const cutDelimiters = (offset: number): Chunking => ({
  name: `delimiters cut after ${offset} bytes`,
  sizes: (b, boundary = BOUNDARY) => {
    const needle = encoder.encode(`--${boundary}`);
    const cuts = [0];
    for (let at = b.indexOf(0x2d); at !== -1; at = b.indexOf(0x2d, at + 1)) {
      if (needle.every((x, i) => b[at + i] === x)) cuts.push(Math.max(0, at - 2 + offset));
    }
    cuts.push(b.length);
    return cuts.slice(1).map((cut, i) => cut - (cuts[i] ?? 0));
  },
});

/** Chunkings: the delimiter of the bodies below is at most 4 + 32 bytes long (workerd's boundary). */
const CHUNKINGS: Chunking[] = [
  { name: "one chunk", sizes: (b) => [b.length] },
  { name: "1-byte chunks", sizes: (b) => Array(b.length).fill(1) },
  { name: "7-byte chunks", sizes: (b) => Array(Math.ceil(b.length / 7)).fill(7) },
  { name: "random chunks", sizes: (b) => [...noise(b.length, 99)].map((x) => 1 + (x % 200)) },
  ...Array.from({ length: 4 + 32 + 3 }, (_, offset) => cutDelimiters(offset)),
];

/** A pull-based source (reads only when asked) giving `body` in fresh chunks of the given sizes. */
function source(body: Uint8Array, sizes: number[] = [body.length], fail?: Error) {
  const stats = { pulls: 0, cancelled: false, ended: false };
  let at = 0;
  let i = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        stats.pulls++;
        if (at >= body.length) {
          if (fail) controller.error(fail);
          else controller.close();
          stats.ended = !fail;
          return;
        }
        const size = sizes[i++] ?? body.length;
        controller.enqueue(body.slice(at, at + size));
        at += size;
      },
      cancel() {
        stats.cancelled = true;
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, stats };
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const pieces: Uint8Array[] = [];
  for await (const piece of stream) pieces.push(piece);
  return concat(...pieces);
}

interface ReadPart extends Omit<FormPart, "body"> {
  data: Uint8Array;
}

async function readParts(parts: AsyncIterable<FormPart>): Promise<ReadPart[]> {
  const out: ReadPart[] = [];
  for await (const { body, ...headers } of parts) out.push({ ...headers, data: await readAll(body) });
  return out;
}

const parse = (body: Uint8Array, sizes?: number[], boundary = BOUNDARY) =>
  readParts(readMultipart(source(body, sizes).stream, boundary));

/** Index of the first differing byte, -1 when equal (toEqual on megabytes is slow and unreadable). */
function firstDifference(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

function expectBytes(actual: Uint8Array, expected: Uint8Array | string): void {
  const want = typeof expected === "string" ? encoder.encode(expected) : expected;
  expect(firstDifference(actual, want), `lengths ${actual.length} / ${want.length}`).toBe(-1);
}

/** `--boundary` lines around parts given as header lines and data. */
function handForm(parts: [headers: string, data: string | Uint8Array][], preamble = "", epilogue = "") {
  const body: (string | Uint8Array)[] = [preamble];
  for (const [headers, data] of parts) body.push(`--${BOUNDARY}\r\n${headers}\r\n\r\n`, data, "\r\n");
  body.push(`--${BOUNDARY}--`, epilogue);
  return concat(...body);
}

const disposition = (name: string, filename?: string) =>
  `Content-Disposition: form-data; name="${name}"${filename === undefined ? "" : `; filename="${filename}"`}`;

async function expectMultipartError(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(MultipartError);
  expect((error as Error).message).toMatch(message);
}

describe("multipartBoundary", () => {
  it.each([
    ["multipart/form-data; boundary=abc", "abc"],
    ['multipart/form-data; boundary="a b"', "a b"],
    ["Multipart/Form-Data; charset=utf-8; BOUNDARY=----x.y", "----x.y"],
    ['multipart/form-data;boundary="q\\"x"', 'q"x'],
    [`multipart/form-data; boundary=${"x".repeat(70)}`, "x".repeat(70)],
  ])("%s → %s", (header, boundary) => {
    expect(multipartBoundary(header)).toEqual({ ok: true, boundary });
  });

  it.each([
    [undefined, /multipart\/form-data with a boundary/],
    [null, /multipart\/form-data with a boundary/],
    ["application/json", /multipart\/form-data with a boundary/],
    ["multipart/mixed; boundary=abc", /multipart\/form-data with a boundary/],
    ["multipart/form-data", /multipart\/form-data with a boundary/],
    ["multipart/form-data; boundary=", /1 to 70/],
    ['multipart/form-data; boundary="ab "', /1 to 70/],
    [`multipart/form-data; boundary=${"x".repeat(71)}`, /1 to 70/],
  ])("refuses %s", (header, message) => {
    const result = multipartBoundary(header);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(message);
  });
});

describe("readMultipart: bodies written by hand", () => {
  const body = handForm(
    [
      [disposition("path"), "dir/sub"],
      [`${disposition("file", "tricky.bin")}\r\nContent-Type: application/octet-stream`, TRICKY],
      [disposition("empty", ""), ""],
      [disposition("note"), `--${BOUNDARY}`],
    ],
    `preamble --${BOUNDARY} not at a line start\r\n`,
    "\r\nepilogue, ignored\r\n--garbage",
  );

  it.each(CHUNKINGS)("parses fields, files and tricky bytes in $name", async ({ sizes }) => {
    const parts = await parse(body, sizes(body));
    expect(parts.map(({ data, ...p }) => p)).toEqual([
      { name: "path", filename: undefined, contentType: undefined },
      { name: "file", filename: "tricky.bin", contentType: "application/octet-stream" },
      { name: "empty", filename: "", contentType: undefined },
      { name: "note", filename: undefined, contentType: undefined },
    ]);
    expectBytes(parts[0]?.data ?? new Uint8Array(), "dir/sub");
    expectBytes(parts[1]?.data ?? new Uint8Array(), TRICKY);
    expectBytes(parts[2]?.data ?? new Uint8Array(), "");
    expectBytes(parts[3]?.data ?? new Uint8Array(), `--${BOUNDARY}`);
  });

  it("reads header names and values case-insensitively, quoted or not, with escapes", async () => {
    const parts = await parse(
      handForm([
        [
          'CONTENT-DISPOSITION: Form-Data; NAME=plain; FileName="a\\"b\\\\c\\d.txt"; filename*=UTF-8\'\'x',
          "1",
        ],
        ['content-disposition:form-data;name="na;me";filename=C:\\x', "2"],
        [
          'X-Other: y\r\ncontent-disposition: form-data; name="folded";\r\n filename="f"\r\nContent-type: text/plain',
          "3",
        ],
        [disposition("päth 📄", "résumé.txt"), "4"],
      ]),
    );
    expect(parts.map(({ data, ...p }) => p)).toEqual([
      { name: "plain", filename: 'a"b\\c\\d.txt', contentType: undefined },
      { name: "na;me", filename: "C:\\x", contentType: undefined },
      { name: "folded", filename: "f", contentType: "text/plain" },
      { name: "päth 📄", filename: "résumé.txt", contentType: undefined },
    ]);
  });

  it("accepts a first boundary with no preamble, padding after delimiters, and no epilogue", async () => {
    const body = concat(
      `--${BOUNDARY} \t\r\n${disposition("a")}\r\n\r\nA`,
      `\r\n--${BOUNDARY}\t\r\n${disposition("b")}\r\n\r\n\r\nB\r\n`,
      `\r\n--${BOUNDARY}--`,
    );
    for (const { sizes } of CHUNKINGS) {
      const parts = await parse(body, sizes(body));
      expect(parts.map((p) => [p.name, new TextDecoder().decode(p.data)])).toEqual([
        ["a", "A"],
        ["b", "\r\nB\r\n"],
      ]);
    }
  });

  it("gives an empty form for a body of only the closing boundary", async () => {
    expect(await parse(encoder.encode(`--${BOUNDARY}--\r\n`))).toEqual([]);
  });
});

describe("readMultipart: bodies from workerd's FormData encoder", () => {
  const file = concat(TRICKY, noise(100_000, 7), "\r\n--", TRICKY);

  async function encoded(form: FormData) {
    const request = new Request("http://x", { method: "POST", body: form });
    const boundary = multipartBoundary(request.headers.get("content-type"));
    if (!boundary.ok) throw new Error(boundary.message);
    return { boundary: boundary.boundary, body: new Uint8Array(await request.arrayBuffer()) };
  }

  it.each([
    ["path before file", ["path", "file"]],
    ["path after file", ["file", "path"]],
  ])("parses %s like workerd's formData() does, in every chunking", async (_, order) => {
    const form = new FormData();
    for (const name of order) {
      if (name === "path") form.append("path", 'dïr/ "quoted"\r\nline');
      else form.append("file", new File([file], 'ré"sumé\n📄.bin', { type: "application/x-thing" }));
    }
    form.append("empty", new File([], "empty.txt"));
    const { boundary, body } = await encoded(form);

    const reference = await new Request("http://x", {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
    }).formData();
    // workers-types types entries as strings (an old compatibility date); files come as File.
    const entries: [string, string | File][] = [...reference.entries()];
    const expected = await Promise.all(
      entries.map(async ([name, value]) =>
        typeof value === "string"
          ? { name, filename: undefined, data: encoder.encode(value) }
          : { name, filename: value.name, data: new Uint8Array(await value.arrayBuffer()) },
      ),
    );
    // The encoder percent-encodes quotes and LF in names; neither side decodes them. (It leaves a CR
    // in a name as it is, which workerd's own parser then refuses: no CR here.)
    expect(expected.map((e) => [e.name, e.filename])).toEqual([
      ...order.map((n) => (n === "path" ? ["path", undefined] : ["file", "ré%22sumé%0A📄.bin"])),
      ["empty", "empty.txt"],
    ]);
    expectBytes(expected[order.indexOf("file")]?.data ?? new Uint8Array(), file);

    for (const { name, sizes } of CHUNKINGS) {
      if (name === "1-byte chunks") continue; // 100 kB byte by byte: covered by the hand-written body
      const parts = await parse(body, sizes(body, boundary), boundary);
      expect(
        parts.map((p) => [p.name, p.filename]),
        name,
      ).toEqual(expected.map((e) => [e.name, e.filename]));
      for (const [i, part] of parts.entries()) expectBytes(part.data, expected[i]?.data ?? new Uint8Array());
      expect(parts.find((p) => p.name === "file")?.contentType).toBe("application/x-thing");
    }
  });

  it("parses a request body as it streams", async () => {
    const form = new FormData();
    form.append("file", new File([file], "f.bin"));
    const request = new Request("http://x", { method: "POST", body: form });
    const boundary = multipartBoundary(request.headers.get("content-type"));
    if (!boundary.ok || !request.body) throw new Error("no multipart body");
    const parts = await readParts(readMultipart(request.body, boundary.boundary));
    expect(parts.map((p) => [p.name, p.filename])).toEqual([["file", "f.bin"]]);
    expectBytes(parts[0]?.data ?? new Uint8Array(), file);
  });
});

describe("readMultipart: malformed bodies", () => {
  const good = handForm([
    [disposition("path"), "p"],
    [disposition("file", "f"), "0123456789"],
  ]);
  const cut = (marker: string, extra = 0) => {
    const at = new TextDecoder().decode(good).indexOf(marker);
    return good.slice(0, at + extra);
  };

  it.each([
    ["in a file's bytes", cut("0123456789", 5)],
    ["right before the closing delimiter", cut(`\r\n--${BOUNDARY}--`)],
    ["inside the closing delimiter", cut(`\r\n--${BOUNDARY}--`, 6)],
    ["right after the closing delimiter's boundary", cut(`\r\n--${BOUNDARY}--`, BOUNDARY.length + 4)],
  ])("a body cut off %s fails the part's body and the form", async (_, body) => {
    for (const { sizes } of CHUNKINGS) {
      const parts = readMultipart(source(body, sizes(body)).stream, BOUNDARY);
      const path = await parts.next();
      if (path.done) throw new Error("no first part");
      expectBytes(await readAll(path.value.body), "p");
      const file = await parts.next();
      if (file.done) throw new Error("no second part");
      await expectMultipartError(readAll(file.value.body), TRUNCATED);
      await expectMultipartError(parts.next(), TRUNCATED);
    }
  });

  it.each([
    ["an empty body", "", TRUNCATED],
    ["only a preamble", "hello\r\n", TRUNCATED],
    ["a cut in the headers", cut('name="file"'), TRUNCATED],
    ["a boundary followed by junk", concat(`--${BOUNDARY}x\r\n`), /followed by something other/],
    ["a part without headers", concat(`--${BOUNDARY}\r\n\r\nx\r\n--${BOUNDARY}--`), /no Content-Disposition/],
    [
      "a part without a name",
      handForm([['Content-Disposition: form-data; filename="f"', "x"]]),
      /with a name/,
    ],
    ["an attachment part", handForm([['Content-Disposition: attachment; name="a"', "x"]]), /no Content/],
    ["a header line with no colon", handForm([[`${disposition("a")}\r\nnonsense`, "x"]]), /malformed header/],
  ])("refuses %s", async (_, body, message) => {
    const bytes = typeof body === "string" ? encoder.encode(body) : body;
    await expectMultipartError(parse(bytes), message);
    await expectMultipartError(parse(bytes, Array(bytes.length).fill(1)), message);
  });

  it("refuses a header block over the limit, however it is chunked", async () => {
    const long = (n: number) => handForm([[`${disposition("a")}\r\nX-Pad: ${"x".repeat(n)}`, "x"]]);
    const limit = 16 * 1024;
    const headerLength = (n: number) => `${disposition("a")}\r\nX-Pad: `.length + n;
    const fits = long(limit - headerLength(0));
    expect((await parse(fits)).map((p) => p.name)).toEqual(["a"]);
    const over = long(limit - headerLength(0) + 1);
    for (const sizes of [[over.length], Array(over.length).fill(1), [100, 16 * 1024, 5]]) {
      await expectMultipartError(parse(over, sizes), /headers are longer than 16384 bytes/);
    }
    await expectMultipartError(
      readParts(readMultipart(source(fits).stream, BOUNDARY, { maxHeaderBytes: 1000 })),
      /longer than 1000 bytes/,
    );
  });

  it("refuses more parts than the limit, before reading the one too many", async () => {
    const parts = (n: number) => handForm(Array.from({ length: n }, (_, i) => [disposition(`f${i}`), "x"]));
    expect(await parse(parts(100))).toHaveLength(100);
    await expectMultipartError(parse(parts(101)), /more than 100 parts/);
    const read: string[] = [];
    const tooMany = readMultipart(source(parts(4)).stream, BOUNDARY, { maxParts: 3 });
    await expectMultipartError(
      (async () => {
        for await (const part of tooMany) read.push(part.name);
      })(),
      /more than 3 parts/,
    );
    expect(read).toEqual(["f0", "f1", "f2"]);
  });

  it("refuses a boundary that is not one", async () => {
    await expectMultipartError(parse(good, undefined, ""), /1 to 70/);
  });
});

describe("readMultipart: streaming", () => {
  it("fails the part's body and the form with the source's own error", async () => {
    const failure = new Error("connection reset");
    const body = handForm([[disposition("file", "f"), noise(1000)]]).slice(0, 600);
    const parts = readMultipart(source(body, [100], failure).stream, BOUNDARY);
    const file = await parts.next();
    if (file.done) throw new Error("no part");
    await expect(readAll(file.value.body)).rejects.toBe(failure);
    await expect(parts.next()).rejects.toBe(failure);
  });

  it("reads the source only as fast as the part's body is read", async () => {
    const data = noise(1_000_000);
    const body = handForm([[disposition("file", "f"), data]]);
    const { stream, stats } = source(body, Array(Math.ceil(body.length / 1000)).fill(1000));
    const parts = readMultipart(stream, BOUNDARY);
    const file = await parts.next();
    if (file.done) throw new Error("no part");
    const reader = file.value.body.getReader();
    let received = 0;
    for (let reads = 1; reads <= 50; reads++) {
      const { value } = await reader.read();
      received += value?.length ?? 0;
      await new Promise((resolve) => setTimeout(resolve, 0)); // time for any read-ahead to happen
      // Pulled but not received: the headers, and a chunk that ended where a delimiter could begin.
      expect(stats.pulls * 1000 - received).toBeLessThanOrEqual(2000);
    }
    expect(stats.pulls).toBeLessThan(55);
    reader.releaseLock();
    expectBytes(concat(data.subarray(0, received), await readAll(file.value.body)), data);
  });

  it("skips the rest of a cancelled part, and the whole of a part not read", async () => {
    const body = handForm([
      [disposition("first"), noise(50_000, 1)],
      [disposition("second"), noise(50_000, 2)],
      [disposition("third"), "third"],
    ]);
    const parts = readMultipart(source(body, Array(100).fill(1000)).stream, BOUNDARY);
    const first = await parts.next();
    if (first.done) throw new Error("no part");
    const reader = first.value.body.getReader();
    expect((await reader.read()).value?.length).toBeGreaterThan(0);
    await reader.cancel();
    const second = await parts.next();
    if (second.done) throw new Error("no part");
    const third = await parts.next(); // the second's body was never read
    if (third.done) throw new Error("no part");
    expect(third.value.name).toBe("third");
    expectBytes(await readAll(third.value.body), "third");
    await expect(readAll(second.value.body)).rejects.toThrow(/skipped/);
    expect((await parts.next()).done).toBe(true);
  });

  it("hands out chunks the consumer may detach", async () => {
    const data = concat(TRICKY, noise(2000, 3), TRICKY);
    const body = handForm([
      [disposition("a"), data],
      [disposition("b"), "bee"],
    ]);
    for (const { name, sizes } of CHUNKINGS) {
      const read: ReadPart[] = [];
      for await (const { body: stream, ...headers } of readMultipart(
        source(body, sizes(body)).stream,
        BOUNDARY,
      )) {
        const pieces: Uint8Array[] = [];
        for await (const chunk of stream) {
          pieces.push(chunk.slice());
          structuredClone(chunk.buffer, { transfer: [chunk.buffer] }); // detaches it
          expect(chunk.length, name).toBe(0);
        }
        read.push({ ...headers, data: concat(...pieces) });
      }
      expect(read.map((p) => p.name)).toEqual(["a", "b"]);
      expectBytes(read[0]?.data ?? new Uint8Array(), data);
      expectBytes(read[1]?.data ?? new Uint8Array(), "bee");
    }
  });

  it("reads a short epilogue to the body's end, cancels a long one, and never a part still read", async () => {
    // A server answering with request bytes unread resets the connection: the client's last line
    // break after the closing boundary, even in a chunk of its own, is read.
    const body = handForm([[disposition("a"), "A"]], "", "epilogue\r\n");
    const done = source(body, [body.length - 4, 2, 2]);
    await readParts(readMultipart(done.stream, BOUNDARY));
    expect(done.stats).toMatchObject({ ended: true, cancelled: false });

    const long = source(handForm([[disposition("a"), "A"]], "", "x".repeat(64 * 1024)), Array(64).fill(2048));
    await readParts(readMultipart(long.stream, BOUNDARY));
    expect(long.stats).toMatchObject({ ended: false, cancelled: true });

    const stopped = source(body, [10, 10, 10, 10, 10, 10, 10, 10, 10]);
    let kept: ReadableStream<Uint8Array> | undefined;
    for await (const part of readMultipart(stopped.stream, BOUNDARY)) {
      kept = part.body;
      break;
    }
    expect(stopped.stats.cancelled).toBe(false);
    expectBytes(await readAll(kept ?? new ReadableStream()), "A");
  });

  it("parses a 32 MiB random file quickly", async () => {
    const data = concat(TRICKY, noise(32 * 1024 * 1024, 12345), TRICKY);
    const body = handForm([
      [disposition("path"), "uploads/big.bin"],
      [`${disposition("file", "big.bin")}\r\nContent-Type: application/octet-stream`, data],
    ]);
    // Chunks as views of one buffer, so the time is the parser's alone (no copies made by the source).
    const chunks = Array.from({ length: Math.ceil(body.length / 65536) }, (_, i) =>
      body.subarray(i * 65536, (i + 1) * 65536),
    );
    const stream = new ReadableStream<Uint8Array>(
      { pull: (controller) => (chunks.length ? controller.enqueue(chunks.shift()) : controller.close()) },
      { highWaterMark: 0 },
    );
    // workerd's clock stands still while code runs; a timer lets it move on before and after.
    const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
    await tick();
    const started = performance.now();
    const pieces: Uint8Array[] = [];
    for await (const part of readMultipart(stream, BOUNDARY)) {
      for await (const piece of part.body) if (part.name === "file") pieces.push(piece);
    }
    await tick();
    const elapsed = performance.now() - started;
    console.log(`32 MiB part parsed in ${elapsed.toFixed(1)} ms (${pieces.length} pieces)`);
    expectBytes(concat(...pieces), data);
    expect(elapsed).toBeLessThan(1500);
  });
});
