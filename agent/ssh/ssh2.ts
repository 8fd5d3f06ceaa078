import { createRequire } from "node:module";
import type * as Ssh2 from "ssh2";

/**
 * ssh2, loaded on first use. It costs the agent ~13 MB of RSS (its JavaScript, and a 16 MB
 * WebAssembly memory for poly1305 set up as it loads), which a host whose pods see no SSH login has
 * no use for: the gateway's listeners are plain TCP servers until a client connects
 * (./gateway.ts), and the host key is read without it (./host-key.ts).
 */
const load = createRequire(import.meta.url);
let loaded: typeof Ssh2 | undefined;

export function ssh2(): typeof Ssh2 {
  loaded ??= load("ssh2") as typeof Ssh2;
  return loaded;
}

/** whether ssh2 has been loaded (bench/agent.ts reports it) */
export const ssh2Loaded = (): boolean => loaded !== undefined;
