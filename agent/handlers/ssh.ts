import { AgentError } from "../errors";
import {
  type AuthorizedKey,
  parseAuthorizedKeyLine,
  parseAuthorizedKeys,
  withKey,
  withoutKey,
} from "../ssh/authorized-keys";
import { readKeyFile, writeKeyFile } from "../ssh/key-file";
import { type HandlerDeps, podStreams } from "./deps";
import { guard } from "./guard";
import type { KeyedLock } from "./keyed-lock";
import type { HandlerTable } from "./types";

type SshKeyOps = "pod.ssh.keys.list" | "pod.ssh.keys.add" | "pod.ssh.keys.remove";

/**
 * The pod's authorized_keys through the control plane. The file in the pod is the truth (its user
 * edits it over SSH too), so every call reads it; a change is a read, an edit and an atomic write
 * under the pod's lock. Keys are the same when type and key data are, whatever the comment.
 */
export function sshHandlers(deps: HandlerDeps, locks: KeyedLock): Pick<HandlerTable, SshKeyOps> {
  const { docker } = deps;
  const prefix = deps.config.namePrefix;
  // runc exec for a running pod where the host can: the write's stdin is then the agent's own pipe
  const exec = podStreams(deps);
  const write = async (name: string, text: string) => {
    try {
      await writeKeyFile(docker, prefix, name, text, exec);
    } finally {
      // whatever happened to the file, the gateway's copy of it is not to be trusted now
      deps.ssh?.keysChanged?.(name);
    }
  };

  const parse = (key: string): AuthorizedKey => {
    const parsed = /[\r\n]/.test(key.trim()) ? null : parseAuthorizedKeyLine(key);
    if (!parsed) {
      throw new AgentError("bad_request", 'key: not an OpenSSH public key ("ssh-ed25519 AAAA… comment")');
    }
    return parsed;
  };

  const read = async (name: string) => {
    const file = await readKeyFile(docker, prefix, name, exec);
    if (file.truncated) {
      throw new AgentError("conflict", `pod ${name}: authorized_keys is too large to edit through the API`);
    }
    return file.text;
  };

  return {
    "pod.ssh.keys.list": guard("pod.ssh.keys.list", async ({ name }) => {
      const { text } = await readKeyFile(docker, prefix, name, exec);
      return { keys: parseAuthorizedKeys(text).map((k) => k.line) };
    }),

    "pod.ssh.keys.add": guard("pod.ssh.keys.add", async ({ name, key }) => {
      const parsed = parse(key);
      return locks.run(name, async () => {
        const next = withKey(await read(name), parsed);
        if (next.added) await write(name, next.text);
        return { added: next.added };
      });
    }),

    "pod.ssh.keys.remove": guard("pod.ssh.keys.remove", async ({ name, key }) => {
      const parsed = parse(key);
      return locks.run(name, async () => {
        const next = withoutKey(await read(name), parsed);
        if (next.removed) await write(name, next.text);
        return { removed: next.removed };
      });
    }),
  };
}
