import type { AuthContext } from "ssh2";
import type { AuthorizedKey } from "./authorized-keys";
import { type KeyOptions, keyPermits } from "./key-options";

export const POD_USER = "pod_user";
/** rejected attempts one connection may make before it is dropped (OpenSSH's MaxAuthTries) */
export const MAX_AUTH_TRIES = 6;
/** one read of authorized_keys serves the two phases of a key (probe, then signature) and a client's next keys */
const KEYS_FRESH_MS = 5_000;

export interface ConnectionAuthOptions {
  /** the client's address, for `from=` */
  ip: string;
  /** the pod's authorized keys, read from the pod on each call */
  loadKeys(): Promise<AuthorizedKey[]>;
  onTooManyTries(): void;
  onLoadError(err: unknown): void;
}

/**
 * Public-key authentication for one connection, as sshd does it: `none` lists the one method;
 * passwords, keyboard-interactive and host-based are refused; a key is accepted only if it is in
 * the pod's authorized_keys. OpenSSH first probes with the bare key (answered "this key would do"
 * without proof), then sends a signature over the session id, which is verified with the listed
 * key itself — never with what the client sent. As in sshd, the first line holding the key whose
 * options let this client in (`from=`, `expiry-time=`) is the one that counts, and its options
 * hold for the whole connection.
 */
export class ConnectionAuth {
  /** a method other than `none` was tried: ending without success is a failed login */
  attempted = false;
  succeeded = false;
  /** the options of the line the client logged in with (once `succeeded`) */
  options: KeyOptions | null = null;
  private rejected = 0;
  private keys: { at: number; keys: Promise<AuthorizedKey[]> } | null = null;

  constructor(private readonly opts: ConnectionAuthOptions) {}

  handle(ctx: AuthContext): void {
    if (ctx.method === "none") {
      ctx.reject(["publickey"]);
      return;
    }
    this.attempted = true;
    if (ctx.method !== "publickey" || ctx.username !== POD_USER) {
      this.reject(ctx);
      return;
    }
    const { key, signature, blob, hashAlgo } = ctx;
    this.authorizedKeys()
      .then((keys) => {
        const listed = keys.find(
          (k) => k.blob.equals(key.data) && k.options !== null && keyPermits(k.options, this.opts.ip),
        );
        if (!listed?.options) this.reject(ctx);
        else if (!signature)
          ctx.accept(); // the probe: "would this key do?"
        else if (!blob || listed.parsed.verify(blob, signature, hashAlgo) !== true) this.reject(ctx);
        else {
          this.succeeded = true;
          this.options = listed.options;
          ctx.accept();
        }
      })
      .catch((err: unknown) => {
        this.opts.onLoadError(err);
        this.reject(ctx);
      });
  }

  private reject(ctx: AuthContext) {
    ctx.reject(["publickey"]);
    if (++this.rejected >= MAX_AUTH_TRIES) this.opts.onTooManyTries();
  }

  private authorizedKeys(): Promise<AuthorizedKey[]> {
    const now = Date.now();
    if (!this.keys || now - this.keys.at > KEYS_FRESH_MS) {
      const keys = this.opts.loadKeys();
      this.keys = { at: now, keys };
      // A failed read is not remembered: the next attempt reads again.
      keys.catch(() => {
        if (this.keys?.keys === keys) this.keys = null;
      });
    }
    return this.keys.keys;
  }
}
