import { z } from "zod";
import { PodName } from "./pod-name";

/**
 * The pod's own `~/.ssh/authorized_keys` (the API's `/api/pods/{name}/ssh/keys`; an account's keys
 * never reach a host by themselves). The file in the pod is the truth: its user edits it over SSH
 * too, so every op reads it. One key per entry, the whole line. Spread into `ops` in ./ops.ts like
 * ./inside.ts.
 */

export const sshOps = {
  "pod.ssh.keys.list": () => ({
    params: z.object({ name: PodName }),
    result: z.object({ keys: z.array(z.string()) }),
  }),
  "pod.ssh.keys.add": () => ({
    params: z.object({ name: PodName, key: z.string() }),
    result: z.object({ added: z.boolean() }),
  }),
  "pod.ssh.keys.remove": () => ({
    params: z.object({ name: PodName, key: z.string() }),
    result: z.object({ removed: z.boolean() }),
  }),
};
