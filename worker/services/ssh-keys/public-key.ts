import { fail, ok, type Result } from "../../../shared/errors";
import { isPositiveMpint, mpintBits, WireReader } from "./wire";

/**
 * OpenSSH public keys as pasted by users (`ssh-ed25519 AAAA… comment`, one line of a .pub file),
 * parsed and checked in plain TypeScript over WebCrypto: this runs in workerd, where Node's crypto
 * key parsing is not available. Every refusal says why, because the person reading it has usually
 * pasted the wrong file rather than a broken key.
 */

export const SUPPORTED_KEY_TYPES = [
  "ssh-ed25519",
  "ssh-rsa",
  "ecdsa-sha2-nistp256",
  "ecdsa-sha2-nistp384",
  "ecdsa-sha2-nistp521",
] as const;
export type SshKeyType = (typeof SUPPORTED_KEY_TYPES)[number];

/** NIST's floor for RSA (OpenSSH itself still takes 1024, which is within reach of factoring). */
export const MIN_RSA_BITS = 2048;
/** OpenSSH's own ceiling (SSHBUF_MAX_BIGNUM): larger keys would not be usable anyway. */
const MAX_RSA_BITS = 16_384;

const CURVES = {
  "ecdsa-sha2-nistp256": { curve: "nistp256", webCrypto: "P-256", bits: 256, coordinateBytes: 32 },
  "ecdsa-sha2-nistp384": { curve: "nistp384", webCrypto: "P-384", bits: 384, coordinateBytes: 48 },
  "ecdsa-sha2-nistp521": { curve: "nistp521", webCrypto: "P-521", bits: 521, coordinateBytes: 66 },
} as const;

const ED25519_KEY_BYTES = 32;

const SUPPORTED_LIST = "ssh-ed25519, ssh-rsa (2048 bits or more) or ecdsa-sha2-nistp256/384/521";

export interface PublicKey {
  type: SshKeyType;
  /** the decoded blob: what the fingerprint is computed over */
  blob: Uint8Array;
  /** canonical base64 of the blob */
  base64: string;
  /** the comment, internal whitespace collapsed to single spaces; "" when there is none */
  comment: string;
  /** key size: the RSA modulus, the curve size, 256 for ed25519 */
  bits: number;
  /** `type base64 comment` (`type base64` without a comment): what is stored and installed */
  normalized: string;
  /** `SHA256:…` exactly as `ssh-keygen -l` prints it */
  fingerprint: string;
}

const isSupported = (type: string): type is SshKeyType =>
  (SUPPORTED_KEY_TYPES as readonly string[]).includes(type);

/** Anything shaped like an OpenSSH key type name, supported or not (`ssh-dss`, `sk-ssh-ed25519@openssh.com` …). */
const KEY_TYPE_SHAPE = /^(ssh|ecdsa|sk|rsa|x509v3)-[A-Za-z0-9@.+-]+$/;

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

const toBase64 = (bytes: Uint8Array): string => {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
};

function fromBase64(text: string): Uint8Array | undefined {
  if (!BASE64.test(text) || text.length % 4 !== 0) return undefined;
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** OpenSSH's SHA256 fingerprint: unpadded base64 of the SHA-256 of the decoded blob. */
export async function fingerprintOf(blob: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", blob));
  return `SHA256:${toBase64(digest).replace(/=+$/, "")}`;
}

/** What the blob of each supported type must hold after its type string; the key size on success. */
async function checkBlob(type: SshKeyType, reader: WireReader, field: string): Promise<Result<number>> {
  const malformed = (what: string) =>
    fail("bad_request", `${field}: the ${type} key data is malformed: ${what}`);
  if (type === "ssh-ed25519") {
    const key = reader.string();
    if (key === undefined) return malformed("it ends before the key");
    if (key.length !== ED25519_KEY_BYTES) {
      return malformed(`an ed25519 key is ${ED25519_KEY_BYTES} bytes, this one is ${key.length}`);
    }
    return reader.done ? ok(256) : malformed("unexpected bytes after the key");
  }
  if (type === "ssh-rsa") {
    const exponent = reader.string();
    const modulus = reader.string();
    if (exponent === undefined || modulus === undefined) return malformed("it ends before the modulus");
    if (!reader.done) return malformed("unexpected bytes after the modulus");
    if (!isPositiveMpint(exponent) || !isPositiveMpint(modulus)) {
      return malformed("the exponent and modulus must be positive");
    }
    const bits = mpintBits(modulus);
    if (bits < MIN_RSA_BITS) {
      return fail(
        "bad_request",
        `${field}: this RSA key has ${bits} bits; at least ${MIN_RSA_BITS} are required (better: an ed25519 key, \`ssh-keygen -t ed25519\`)`,
      );
    }
    if (bits > MAX_RSA_BITS) {
      return fail("bad_request", `${field}: RSA keys over ${MAX_RSA_BITS} bits are not supported`);
    }
    return ok(bits);
  }
  const spec = CURVES[type];
  const curve = reader.text();
  const point = reader.string();
  if (curve === undefined || point === undefined) return malformed("it ends before the public point");
  if (!reader.done) return malformed("unexpected bytes after the public point");
  if (curve !== spec.curve) return malformed(`the curve is "${printable(curve)}", expected "${spec.curve}"`);
  const expected = 1 + 2 * spec.coordinateBytes;
  if (point.length !== expected || point[0] !== 0x04) {
    return malformed(`the public point must be ${expected} bytes, uncompressed (0x04 …)`);
  }
  try {
    // WebCrypto refuses a point that is not on the curve: a key nobody could hold the private half of.
    await crypto.subtle.importKey("raw", point, { name: "ECDSA", namedCurve: spec.webCrypto }, false, [
      "verify",
    ]);
  } catch {
    return malformed(`the public point is not on curve ${spec.curve}`);
  }
  return ok(spec.bits);
}

/** Keeps an attacker-chosen type string in an error message short and readable. */
const printable = (text: string) => {
  const clean = text.replace(/[^\x20-\x7e]/g, "?");
  return clean.length > 40 ? `${clean.slice(0, 40)}…` : clean;
};

/** The refusals that do not need the blob: wrong file, several keys, options, unsupported types. */
function refuseShape(text: string, field: string): Result<string[]> {
  if (text === "") {
    return fail(
      "bad_request",
      `${field}: is empty; paste a public key such as the contents of ~/.ssh/id_ed25519.pub`,
    );
  }
  if (/PRIVATE KEY-----|PuTTY-User-Key-File/.test(text)) {
    return fail(
      "bad_request",
      `${field}: this is a private key; never share it. Paste the public key (the .pub file) instead`,
    );
  }
  if (text.includes("---- BEGIN SSH2 PUBLIC KEY ----")) {
    return fail(
      "bad_request",
      `${field}: this is an RFC 4716 (SSH2) public key; convert it with \`ssh-keygen -i -f <file>\` and paste the one-line result`,
    );
  }
  if (text.includes("-----BEGIN")) {
    return fail(
      "bad_request",
      `${field}: PEM files are not accepted; paste the one-line OpenSSH public key (the .pub file)`,
    );
  }
  const lines = text.split(/\r\n|\r|\n/).filter((line) => line.trim() !== "");
  if (lines.length > 1) {
    return fail("bad_request", `${field}: must be exactly one key on one line; found ${lines.length} lines`);
  }
  const fields = text.split(/[ \t]+/);
  const [type = ""] = fields;
  if (!isSupported(type)) {
    if (type === "ssh-dss") {
      return fail(
        "bad_request",
        `${field}: DSA keys (ssh-dss) are not accepted: they are insecure and OpenSSH disabled them; use ${SUPPORTED_LIST}`,
      );
    }
    if (fields.slice(1).some((f) => isSupported(f) || f === "ssh-dss")) {
      return fail(
        "bad_request",
        `${field}: authorized_keys options before the key (such as command=, from=, no-pty) are not accepted; paste only "<type> <base64> [comment]"`,
      );
    }
    if (KEY_TYPE_SHAPE.test(type)) {
      return fail(
        "bad_request",
        `${field}: key type "${printable(type)}" is not supported; use ${SUPPORTED_LIST}`,
      );
    }
    return fail(
      "bad_request",
      `${field}: not an OpenSSH public key; it must look like "ssh-ed25519 AAAA… comment" (the contents of a .pub file)`,
    );
  }
  // A second key pasted on the same line would otherwise pass for the first key's comment.
  const rest = fields.slice(2);
  if (rest.some((f, i) => (isSupported(f) || f === "ssh-dss") && (rest[i + 1] ?? "").startsWith("AAAA"))) {
    return fail("bad_request", `${field}: must be exactly one key; a second key follows the first`);
  }
  return ok(fields);
}

/**
 * Parses one OpenSSH public key line. `field` names the request field in error messages
 * (`public_key`, `key`, `ssh_key`).
 */
export async function parsePublicKey(input: string, field = "public_key"): Promise<Result<PublicKey>> {
  const shape = refuseShape(input.trim(), field);
  if (!shape.ok) return shape;
  const [type, data, ...commentWords] = shape.value;
  if (!type || !isSupported(type)) return fail("bad_request", `${field}: not an OpenSSH public key`);
  if (!data) return fail("bad_request", `${field}: the key data (base64) after "${type}" is missing`);
  const blob = fromBase64(data);
  if (!blob) return fail("bad_request", `${field}: the key data after "${type}" is not valid base64`);

  const reader = new WireReader(blob);
  const inner = reader.text();
  if (inner === undefined) return fail("bad_request", `${field}: the key data is not an SSH public key blob`);
  if (inner !== type) {
    return fail(
      "bad_request",
      `${field}: the line says "${type}" but the key data is a "${printable(inner)}" key; was the line edited?`,
    );
  }
  const bits = await checkBlob(type, reader, field);
  if (!bits.ok) return bits;

  const comment = commentWords.join(" ");
  // The comment travels into the pod's authorized_keys: no control characters in a line of it.
  if (/\p{Cc}/u.test(comment)) {
    return fail("bad_request", `${field}: the comment contains control characters`);
  }
  const base64 = toBase64(blob);
  return ok({
    type,
    blob,
    base64,
    comment,
    bits: bits.value,
    normalized: comment ? `${type} ${base64} ${comment}` : `${type} ${base64}`,
    fingerprint: await fingerprintOf(blob),
  });
}

export const MAX_KEY_NAME = 100;

/** A name for a key added without one: its comment, else e.g. "ed25519 key", "rsa 4096 key". */
export function defaultKeyName(key: PublicKey): string {
  if (key.comment) return Array.from(key.comment).slice(0, MAX_KEY_NAME).join("");
  if (key.type === "ssh-ed25519") return "ed25519 key";
  if (key.type === "ssh-rsa") return `rsa ${key.bits} key`;
  return `ecdsa ${key.bits} key`;
}

export interface KeyMaterial {
  type: string;
  /** the base64 blob, canonical when it decodes */
  data: string;
  comment: string;
}

/**
 * The key inside an authorized_keys line, of any type and after any options, without validating it:
 * lines in a pod's file may be written by hand. Two lines hold the same key when type and data match,
 * whatever their comments or options.
 */
export function keyMaterial(line: string): KeyMaterial | undefined {
  const text = line.trim();
  if (text.startsWith("#")) return undefined; // a commented-out key is not in force
  const fields = text.split(/[ \t]+/);
  for (let i = 0; i < fields.length - 1; i++) {
    const type = fields[i] ?? "";
    const data = fields[i + 1] ?? "";
    if (KEY_TYPE_SHAPE.test(type) && data.startsWith("AAAA") && BASE64.test(data)) {
      const blob = fromBase64(data);
      return { type, data: blob ? toBase64(blob) : data, comment: fields.slice(i + 2).join(" ") };
    }
  }
  return undefined;
}

export const sameKey = (a: KeyMaterial, b: KeyMaterial) => a.type === b.type && a.data === b.data;

/** The fingerprint of a key found by `keyMaterial`, or undefined when its data does not decode. */
export async function materialFingerprint(key: KeyMaterial): Promise<string | undefined> {
  const blob = fromBase64(key.data);
  return blob ? fingerprintOf(blob) : undefined;
}
