import { connect, createServer, type Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { offerIn, readClientOffer } from "../../agent/ssh/client-offer";

/**
 * The client's offer read before ssh2 starts (agent/ssh/client-offer.ts): what is parsed out of the
 * client's identification line and KEXINIT, and that a hostile or silent client gets nothing more
 * than ssh2 would have given it (the bytes handed back whole, bounded waits and work).
 */

const IDENT = Buffer.from("SSH-2.0-podhost\r\n");

const nameList = (names: string[]) => {
  const text = Buffer.from(names.join(","), "latin1");
  const n = Buffer.alloc(4);
  n.writeUInt32BE(text.length);
  return Buffer.concat([n, text]);
};

/** a client's identification line and KEXINIT packet (unencrypted framing: RFC 4253 6) */
function clientHello(c2s: string[], s2c = c2s): Buffer {
  const payload = Buffer.concat([
    Buffer.from([20]),
    Buffer.alloc(16, 7),
    nameList(["curve25519-sha256"]),
    nameList(["ssh-ed25519"]),
    nameList(c2s),
    nameList(s2c),
    ...Array.from({ length: 6 }, () => nameList([])),
    Buffer.from([0, 0, 0, 0, 0]),
  ]);
  const padding = 8 - ((payload.length + 5) % 8) + 4;
  const length = Buffer.alloc(5);
  length.writeUInt32BE(payload.length + padding + 1);
  length[4] = padding;
  return Buffer.concat([
    Buffer.from("SSH-2.0-OpenSSH_9.2p1 Debian\r\n"),
    length,
    payload,
    Buffer.alloc(padding),
  ]);
}

const OPENSSH = ["chacha20-poly1305@openssh.com", "aes128-ctr", "aes128-gcm@openssh.com"];

describe("offerIn", () => {
  it("finds AES-GCM anywhere in both directions' lists; one direction without it is no offer", () => {
    expect(offerIn(clientHello(OPENSSH))).toEqual({ gcm: true });
    expect(offerIn(clientHello(["aes256-gcm@openssh.com"]))).toEqual({ gcm: true });
    expect(offerIn(clientHello(["aes128-ctr", "chacha20-poly1305@openssh.com"]))).toEqual({ gcm: false });
    expect(offerIn(clientHello(OPENSSH, ["aes128-ctr"]))).toEqual({ gcm: false });
    // a name that only contains it does not count
    expect(offerIn(clientHello(["xaes128-gcm@openssh.com"]))).toEqual({ gcm: false });
  });

  it("asks for more until the line and the whole first packet came, byte by byte", () => {
    const hello = clientHello(OPENSSH);
    for (let i = 0; i < hello.length; i++) expect(offerIn(hello.subarray(0, i))).toBe("more");
    expect(offerIn(hello)).toEqual({ gcm: true });
  });

  it("gives up without an offer on anything malformed (attacker: lengths past the packet, no line end)", () => {
    const hello = clientHello(OPENSSH);
    const lineEnd = hello.indexOf(0x0a) + 1;
    expect(offerIn(Buffer.alloc(300, 0x41))).toEqual({ gcm: false }); // no line end in 255 bytes
    expect(offerIn(Buffer.concat([Buffer.from("HELLO\r\n"), hello.subarray(lineEnd)]))).toEqual({
      gcm: false,
    });
    const huge = Buffer.from(hello);
    huge.writeUInt32BE(0xffffffff, lineEnd); // a packet of 4 GB: not waited for
    expect(offerIn(huge)).toEqual({ gcm: false });
    const listPastEnd = Buffer.from(hello);
    listPastEnd.writeUInt32BE(0x7fffffff, lineEnd + 5 + 17); // the kex list claims 2 GB
    expect(offerIn(listPastEnd)).toEqual({ gcm: false });
    const notKexinit = Buffer.from(hello);
    notKexinit[lineEnd + 5] = 21;
    expect(offerIn(notKexinit)).toEqual({ gcm: false });
  });
});

describe("readClientOffer", () => {
  /** a server reading the offer of what `client` does with its socket */
  async function served(client: (socket: Socket) => void, waitMs = 2_000) {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const accepted = new Promise<Socket>((r) => server.once("connection", r));
    const address = server.address();
    if (!address || typeof address === "string") throw new Error("no port");
    const socket = connect(address.port, "127.0.0.1");
    const fromServer: Buffer[] = [];
    socket.on("data", (b: Buffer) => fromServer.push(b));
    client(socket);
    const serverSide = await accepted;
    const started = Date.now();
    const offer = await readClientOffer(serverSide, IDENT, waitMs);
    const tookMs = Date.now() - started;
    // the bytes were put back: the next reader gets them all, in order
    const rest: Buffer[] = [];
    serverSide.on("data", (b: Buffer) => rest.push(b));
    serverSide.resume();
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    serverSide.destroy();
    server.close();
    return { offer, tookMs, reread: Buffer.concat(rest), sent: Buffer.concat(fromServer) };
  }

  it("sends the identification line, reads the offer sent in pieces and hands every byte back", async () => {
    const hello = clientHello(OPENSSH);
    const extra = Buffer.from("first packet after the KEXINIT");
    const r = await served((socket) => {
      socket.write(hello.subarray(0, 10));
      setTimeout(() => socket.write(Buffer.concat([hello.subarray(10), extra])), 30);
    });
    expect(r.sent.equals(IDENT)).toBe(true);
    expect(r.offer.gcm).toBe(true);
    expect(r.reread.equals(Buffer.concat([hello, extra]))).toBe(true);
  });

  it("hands a silent client on after the wait, and a client that hangs up at once", async () => {
    const silent = await served(() => undefined, 300);
    expect(silent.offer).toEqual({ bytes: Buffer.alloc(0), gcm: false });
    expect(silent.tookMs).toBeLessThan(2_000);
    const gone = await served((socket) => socket.end());
    expect(gone.offer.gcm).toBe(false);
  });
});
