/**
 * A streaming multipart/form-data reader (RFC 7578 over RFC 2046's multipart syntax) on web streams.
 *
 * `request.formData()` holds the whole body before anything can move on; this reader hands out each
 * part's bytes as they arrive, so an upload flows onward while the client is still sending it. Part
 * bodies are pull-based streams that read the source only when read themselves, so a slow consumer
 * slows the reading of the request instead of piling it up in memory.
 *
 * Memory: a part's headers (bounded) and at most delimiter-length − 1 bytes held back at a chunk's end,
 * where a delimiter may have begun. Speed: the delimiter is searched for with Boyer–Moore–Horspool
 * (see `Needle`), and a chunk is copied only when bytes held back must be joined to it.
 *
 * A chunk handed to a consumer is never looked at again: the consumer may transfer (detach) its
 * buffer, as some sinks do. Whatever the reader keeps of a buffer it hands out is copied first.
 */

import { Needle, startsWith } from "./byte-needle";
import { MultipartError, parseParameters, parsePartHeaders } from "./multipart-headers";

export { MultipartError };

export interface FormPart {
  /** the part's `name` from its Content-Disposition */
  name: string;
  /** the part's `filename`, "" when sent empty, undefined for a plain field */
  filename: string | undefined;
  /** the part's Content-Type as sent, if given */
  contentType: string | undefined;
  /**
   * The part's bytes as they arrive. Read it to the end or cancel it before asking for the next
   * part; asking earlier skips the rest of it (and reading it after that fails).
   */
  body: ReadableStream<Uint8Array>;
}

export interface MultipartLimits {
  /** bytes of one part's header block (and of the padding after a boundary) */
  maxHeaderBytes: number;
  maxParts: number;
}

export const MULTIPART_LIMITS: MultipartLimits = { maxHeaderBytes: 16 * 1024, maxParts: 100 };

const NOT_FORM_DATA = "Content-Type must be multipart/form-data with a boundary";
const BAD_BOUNDARY =
  "the multipart boundary must be 1 to 70 printable ASCII characters, the last not a space";
const TRUNCATED = "the multipart body ended before its closing boundary";

/** RFC 2046 allows 1–70 characters, the last not a space (a trailing space would read as padding). */
const BOUNDARY = /^[ -~]{0,69}[!-~]$/;

/** The boundary of a multipart/form-data Content-Type, or the message to refuse it with. */
export function multipartBoundary(
  contentType: string | undefined | null,
): { ok: true; boundary: string } | { ok: false; message: string } {
  const { value, params } = parseParameters(contentType ?? "");
  const boundary = params.get("boundary");
  if (value.toLowerCase() !== "multipart/form-data" || boundary === undefined) {
    return { ok: false, message: NOT_FORM_DATA };
  }
  if (!BOUNDARY.test(boundary)) return { ok: false, message: BAD_BOUNDARY };
  return { ok: true, boundary };
}

/**
 * The parts of a multipart/form-data body, one after the other. Throws `MultipartError` for a
 * malformed body; a part body cut off by the end of the source (or by a source error) errors, so a
 * truncated upload never looks complete. After the closing boundary the epilogue (the client's last
 * line break) is read to the end of the body, up to `maxHeaderBytes`, and ignored: a server that
 * answers with request bytes still unread closes the connection with a TCP reset, which the client
 * may read before the answer ("connection reset by peer" after a whole upload went through). After
 * an error, or past that bound, the source is cancelled; stopping early while a part's body is being
 * read leaves the source to that body, which can still be read to its end.
 */
export async function* readMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  limits: Partial<MultipartLimits> = {},
): AsyncGenerator<FormPart, void, undefined> {
  const { maxHeaderBytes, maxParts } = { ...MULTIPART_LIMITS, ...limits };
  if (!BOUNDARY.test(boundary)) throw new MultipartError(BAD_BOUNDARY);
  const reader = body.getReader();
  const parser = new Parser(reader, boundary, maxHeaderBytes);
  let current: PartBody | undefined;
  try {
    let next = await parser.start();
    for (let count = 1; next === "part"; count++) {
      if (count > maxParts) throw new MultipartError(`the multipart body has more than ${maxParts} parts`);
      const headers = await parser.readHeaders();
      current = new PartBody(parser);
      yield { ...headers, body: current.stream };
      next = await current.finish();
    }
    if (next === "close") await parser.readEpilogue(maxHeaderBytes);
  } finally {
    if (!current || current.done) await reader.cancel().catch(() => {});
  }
}

const CR = 0x0d;
const LF = 0x0a;
const DASH = 0x2d;
const SPACE = 0x20;
const TAB = 0x09;
const EMPTY = new Uint8Array(0);
const utf8 = new TextDecoder();

const HEADERS_END = new Needle(Uint8Array.of(CR, LF, CR, LF));

/** What follows a delimiter: another part, or the close of the body. */
type AfterDelimiter = "part" | "close";

/** One part's body: a stream the consumer pulls, each pull taking the next bytes from the parser. */
class PartBody {
  readonly stream: ReadableStream<Uint8Array>;
  /** closed, cancelled, failed or skipped: the stream touches the source no more */
  done = false;
  private skipped = false;
  private pulling: Promise<void> = Promise.resolve();

  constructor(private readonly parser: Parser) {
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: (controller) => {
          this.pulling = this.pull(controller);
          return this.pulling;
        },
        cancel: () => {
          this.done = true;
        },
      },
      { highWaterMark: 0 },
    );
  }

  private async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    if (this.skipped) throw new Error("the part was skipped: the next part was asked for before its end");
    try {
      const bytes = await this.parser.readPartBytes();
      // Cancelled while the read was under way: those bytes are skipped like the rest.
      if (this.done) return;
      if (bytes) controller.enqueue(bytes);
      else {
        this.done = true;
        controller.close();
      }
    } catch (error) {
      this.done = true;
      throw error;
    }
  }

  /** On the ask for the next part: lets a read under way finish, skips the rest, says what follows. */
  async finish(): Promise<AfterDelimiter> {
    let pulling: Promise<void>;
    do {
      pulling = this.pulling;
      await pulling; // a source error or malformed body that failed the part fails the form too
    } while (pulling !== this.pulling);
    if (!this.done) {
      this.skipped = true;
      this.done = true;
    }
    return this.parser.skipRestOfPart();
  }
}

/** The body's syntax over its bytes: preamble, delimiters, header blocks, part bytes. */
class Parser {
  private readonly unparsed: Unparsed;
  /** CRLF "--" boundary */
  private readonly delimiter: Needle;
  /** set once the current part's closing delimiter has been read */
  private afterPart: AfterDelimiter | undefined;

  constructor(
    reader: ReadableStreamDefaultReader<Uint8Array>,
    boundary: string,
    private readonly maxHeaderBytes: number,
  ) {
    this.unparsed = new Unparsed(reader);
    this.delimiter = new Needle(new TextEncoder().encode(`\r\n--${boundary}`));
  }

  /** Skips the preamble and reads the first delimiter, which may open the body without its CRLF. */
  async start(): Promise<AfterDelimiter> {
    const opening = this.delimiter.bytes.subarray(2);
    for (;;) {
      const bytes = this.unparsed.bytes;
      const n = Math.min(bytes.length, opening.length);
      if (!startsWith(bytes, opening.subarray(0, n))) break;
      if (n === opening.length) return this.afterDelimiter(n);
      await this.more();
    }
    for (;;) {
      const bytes = this.unparsed.bytes;
      const at = this.delimiter.find(bytes);
      if (at !== -1 && at + this.delimiter.bytes.length <= bytes.length) {
        this.unparsed.skip(at);
        return this.afterDelimiter(this.delimiter.bytes.length);
      }
      this.unparsed.skip(at === -1 ? bytes.length : at);
      await this.more();
    }
  }

  /** Reads a part's header block, which ends at an empty line; the bytes after it are the part's. */
  async readHeaders(): Promise<Omit<FormPart, "body">> {
    this.afterPart = undefined;
    let from = 0;
    for (;;) {
      const bytes = this.unparsed.bytes;
      if (bytes.length >= 2) {
        // The delimiter line's CRLF and this one make the empty line of an empty header block.
        if (bytes[0] === CR && bytes[1] === LF) {
          this.unparsed.skip(2);
          return parsePartHeaders("");
        }
        const at = HEADERS_END.find(bytes, from);
        if (at !== -1 && at + HEADERS_END.bytes.length <= bytes.length && at <= this.maxHeaderBytes) {
          const text = utf8.decode(bytes.subarray(0, at));
          this.unparsed.skip(at + HEADERS_END.bytes.length);
          return parsePartHeaders(text);
        }
        // The block is at least as long as the bytes before where its end could still begin.
        from = at === -1 ? bytes.length : at;
        if (from > this.maxHeaderBytes) {
          throw new MultipartError(`a part's headers are longer than ${this.maxHeaderBytes} bytes`);
        }
      }
      await this.more();
    }
  }

  /** The current part's next bytes, or null once its closing delimiter has been read. */
  async readPartBytes(): Promise<Uint8Array | null> {
    const ahead = await this.partBytesAhead();
    return typeof ahead === "number" ? this.unparsed.take(ahead) : null;
  }

  /** Skips what is left of the current part, and says what follows it. */
  async skipRestOfPart(): Promise<AfterDelimiter> {
    for (;;) {
      const ahead = await this.partBytesAhead();
      if (typeof ahead !== "number") return ahead;
      this.unparsed.skip(ahead);
    }
  }

  /** How many bytes ahead surely belong to the current part (at least one), or what follows its end. */
  private async partBytesAhead(): Promise<number | AfterDelimiter> {
    if (this.afterPart) return this.afterPart;
    for (;;) {
      const bytes = this.unparsed.bytes;
      const at = this.delimiter.find(bytes);
      if (at === -1 && bytes.length > 0) return bytes.length;
      if (at > 0) return at; // the bytes before a delimiter, or before where one may begin
      if (at === 0 && bytes.length >= this.delimiter.bytes.length) {
        this.afterPart = await this.afterDelimiter(this.delimiter.bytes.length);
        return this.afterPart;
      }
      await this.more();
    }
  }

  /**
   * Reads what follows a delimiter that ends `end` bytes in: "--" closes the body; otherwise
   * optional spaces or tabs (transport padding) and a CRLF start the next part's headers.
   */
  private async afterDelimiter(end: number): Promise<AfterDelimiter> {
    let at = end;
    for (;;) {
      const bytes = this.unparsed.bytes;
      // Every valid ending has at least two bytes from here on.
      if (at + 2 > bytes.length) {
        await this.more();
        continue;
      }
      const [a, b] = [bytes[at], bytes[at + 1]];
      if (a === CR && b === LF) {
        this.unparsed.skip(at + 2);
        return "part";
      }
      if (a === DASH && b === DASH && at === end) {
        this.unparsed.skip(at + 2);
        return "close";
      }
      if ((a !== SPACE && a !== TAB) || at - end >= this.maxHeaderBytes) {
        throw new MultipartError("a multipart boundary is followed by something other than a line break");
      }
      at++;
    }
  }

  /** After the closing delimiter: reads on to the end of the body, at most `max` bytes of it. */
  async readEpilogue(max: number): Promise<void> {
    let read = this.unparsed.bytes.length;
    this.unparsed.skip(read);
    while (read <= max && (await this.unparsed.more())) {
      read += this.unparsed.bytes.length;
      this.unparsed.skip(this.unparsed.bytes.length);
    }
  }

  private async more(): Promise<void> {
    if (!(await this.unparsed.more())) throw new MultipartError(TRUNCATED);
  }
}

/**
 * The body's bytes not parsed yet: a chunk as read, or a buffer of our own when bytes held back had to
 * be joined to the next chunk. `own` is that buffer while nothing of it has been handed out, so later
 * chunks can be appended in place: headers trickling in byte by byte cost linear copying, not quadratic.
 */
class Unparsed {
  bytes: Uint8Array = EMPTY;
  private own: Uint8Array | null = null;
  private ended = false;

  constructor(private readonly reader: ReadableStreamDefaultReader<Uint8Array>) {}

  /** Reads the next non-empty chunk onto the unparsed bytes; false at the end of the source. */
  async more(): Promise<boolean> {
    while (!this.ended) {
      const { done, value } = await this.reader.read();
      if (done) this.ended = true;
      else if (value.length > 0) {
        this.append(value);
        return true;
      }
    }
    return false;
  }

  skip(n: number): void {
    this.bytes = this.bytes.subarray(n);
  }

  /** Hands out the first n bytes; the smaller of them and the rest is copied, so no buffer is shared. */
  take(n: number): Uint8Array {
    const piece = this.bytes.subarray(0, n);
    const rest = this.bytes.subarray(n);
    if (rest.length === 0) {
      this.bytes = EMPTY;
      this.own = null;
      return piece;
    }
    if (piece.length <= rest.length) {
      this.bytes = rest;
      return piece.slice();
    }
    this.bytes = rest.slice();
    this.own = null;
    return piece;
  }

  private append(chunk: Uint8Array): void {
    const kept = this.bytes;
    if (kept.length === 0) {
      this.bytes = chunk;
      this.own = null;
      return;
    }
    const end = kept.byteOffset + kept.length;
    if (this.own && kept.buffer === this.own.buffer && end + chunk.length <= this.own.length) {
      this.own.set(chunk, end);
      this.bytes = this.own.subarray(kept.byteOffset, end + chunk.length);
      return;
    }
    const length = kept.length + chunk.length;
    this.own = new Uint8Array(Math.max(length, 2 * kept.length));
    this.own.set(kept);
    this.own.set(chunk, kept.length);
    this.bytes = this.own.subarray(0, length);
  }
}
