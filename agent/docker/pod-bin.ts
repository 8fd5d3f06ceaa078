/**
 * The agent's own commands in a pod run by absolute path under a fixed PATH. The pod's user owns
 * `~/.npm-global/bin`, which the Node.js image puts first on its PATH: a `sh`, `timeout` or `tail`
 * planted there must never run in place of the system's when the agent reads something out of a
 * pod. Every exec, `runc exec` and helper container the agent starts gets AGENT_PATH_ENV, so even a
 * command its scripts name without a path resolves in /usr/bin or /bin (root-owned in every image).
 *
 * The pod's own PATH applies on purpose only where the user's code is the point: the command runner
 * (`pod.exec`: the user's argv, under an absolute `timeout`), and the install steps of reload (npm,
 * pip, composer, `npm run build`), which run as the app would. See docs/inside.md.
 */

export const AGENT_PATH = "/usr/bin:/bin";
export const AGENT_PATH_ENV = `PATH=${AGENT_PATH}`;

export const SH = "/bin/sh";
export const BASH = "/bin/bash";
export const TIMEOUT = "/usr/bin/timeout";
export const PYTHON3 = "/usr/bin/python3";
export const SV = "/usr/bin/sv";
export const DU = "/usr/bin/du";
