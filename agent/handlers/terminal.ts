import { podNames } from "../docker/naming";
import { AgentError } from "../errors";
import { PodProcessLauncher } from "../ssh/pod-process";
import { TerminalLimits } from "../terminal/limits";
import { openTerminal } from "../terminal/session";
import type { HandlerDeps } from "./deps";
import { guard } from "./guard";
import type { HandlerTable } from "./types";

/**
 * The dashboard's web terminal (../terminal/): a session opened by the control plane, whose bytes
 * then go over the agent's own WebSocket to the session's relay, never over the control socket.
 */
export function terminalHandlers(deps: HandlerDeps): Pick<HandlerTable, "pod.terminal.open"> {
  const limits = new TerminalLimits();
  // A terminal is always a `docker exec` with a pty (runc exec serves only the sessions without one).
  const processes = new PodProcessLauncher(deps.docker, null);
  return {
    "pod.terminal.open": guard("pod.terminal.open", async ({ name, relay, team, cols, rows }) => {
      const { apiUrl, agentToken } = deps.config;
      if (!apiUrl || !agentToken)
        throw new AgentError("unavailable", "this agent has no connection to the control plane's relay");
      const leave = limits.enter(name, team);
      try {
        await openTerminal(
          {
            processes,
            apiUrl,
            agentToken,
            idleMs: deps.config.sshIdleTimeoutMs,
            log: deps.log,
            podActivity: () => deps.ssh?.keysChanged?.(name),
          },
          { pod: name, container: podNames(deps.config.namePrefix, name).container, relay, cols, rows },
          leave,
        );
      } catch (err) {
        leave();
        throw err;
      }
      return { opened: true as const };
    }),
  };
}
