import { MAX_TERMINALS_PER_POD, MAX_TERMINALS_PER_TEAM } from "../../shared/protocol/terminal";
import { AgentError } from "../errors";

/**
 * The web terminal sessions open on this host, counted per pod and per team: the host's fair share
 * (8 of one pod, 16 of one team's pods), kept apart from the control plane's count of commands in
 * progress, so open terminals never take a pod's command slots. The agent holds the count because
 * it holds the sessions: a count can never outlive its session, not even across a control plane
 * restart.
 */
export class TerminalLimits {
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly perPod = MAX_TERMINALS_PER_POD,
    private readonly perTeam = MAX_TERMINALS_PER_TEAM,
  ) {}

  /** Takes a place for a session, or throws `rate_limited` naming the full cap; `leave` gives it back. */
  enter(pod: string, team: string): () => void {
    const podKey = `pod:${pod}`;
    const teamKey = `team:${team}`;
    if ((this.counts.get(podKey) ?? 0) >= this.perPod)
      throw new AgentError(
        "rate_limited",
        `pod ${pod} already has ${this.perPod} terminal sessions open; close one first`,
      );
    if ((this.counts.get(teamKey) ?? 0) >= this.perTeam)
      throw new AgentError(
        "rate_limited",
        `your team already has ${this.perTeam} terminal sessions open on this pod's host; close one first`,
      );
    for (const key of [podKey, teamKey]) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let left = false;
    return () => {
      if (left) return;
      left = true;
      for (const key of [podKey, teamKey]) {
        const n = (this.counts.get(key) ?? 1) - 1;
        if (n > 0) this.counts.set(key, n);
        else this.counts.delete(key);
      }
    };
  }
}
