import type { AuthContext } from "ssh2";
import type { AuthorizedKey } from "./authorized-keys";
import { type KeyOptions, keyPermits } from "./key-options";

export const POD_USER = "pod_user";
/** rejected attempts one connection may make before it is dropped (OpenSSH's MaxAuthTries) */
export const MAX_AUTH_TRIES = 6;

export interface ConnectionAuthOptions {
  /** the client's address, for `from=` */
  ip: string;
  /** the pod's authorized keys (the gateway's shared copy, key-cache.ts); null: the pod is not running */
  loadKeys(): Promise<AuthorizedKey[] | null>;
  /**
   * The connection's first rejected credentials (`none` aside): a failed login counts from here, not
   * from the connection's end, so holding connections open buys an attacker nothing.
   */
  onFirstFailure(): void;
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
 * hold for the whole connection. A stopped pod refuses every key without counting a failure.
 */
export class ConnectionAuth {
  /** a method other than `none` was tried: ending without success is a failed login */
  attempted = false;
  succeeded = false;
  /** a rejection was counted against the address (once per connection) */
  failed = false;
  /** the options of the line the client logged in with (once `succeeded`) */
  options: KeyOptions | null = null;
  private rejected = 0;

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
    this.opts
      .loadKeys()
      .then((keys) => {
        if (keys === null) {
          this.reject(ctx, false);
          return;
        }
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

  private reject(ctx: AuthContext, counted = true) {
    ctx.reject(["publickey"]);
    if (counted && !this.failed) {
      this.failed = true;
      this.opts.onFirstFailure();
    }
    if (++this.rejected >= MAX_AUTH_TRIES) this.opts.onTooManyTries();
  }
}
