/**
 * Commands in progress on one host, counted per pod and per team: the host's fair share. A pod
 * gets at most `perPod` at once and a team (all its pods on this host) at most `perTeam`, so one
 * tenant firing requests gets 429s rather than the host's attention at every other tenant's
 * expense. Counts live in memory: callers' RPCs keep the object resident while they wait, so a
 * count never outlives the calls it counts.
 */
export interface FairShare {
  perPod: number;
  perTeam: number;
}

export class InFlight {
  private readonly counts = new Map<string, number>();

  constructor(private readonly share: FairShare) {}

  /**
   * Takes a place for a command on `pod` for `team` (either may be absent), or says which cap is
   * full. The caller gives the place back with the returned `leave`.
   */
  enter(pod: string | undefined, team: string | undefined): { leave: () => void } | { refused: string } {
    const keys: string[] = [];
    if (pod) {
      const busy = this.counts.get(`pod:${pod}`) ?? 0;
      if (busy >= this.share.perPod)
        return { refused: `pod ${pod} already has ${busy} operations in progress on its host` };
      keys.push(`pod:${pod}`);
    }
    if (team) {
      const busy = this.counts.get(`team:${team}`) ?? 0;
      if (busy >= this.share.perTeam)
        return { refused: `your team already has ${busy} operations in progress on this pod's host` };
      keys.push(`team:${team}`);
    }
    for (const key of keys) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    let left = false;
    return {
      leave: () => {
        if (left) return;
        left = true;
        for (const key of keys) {
          const n = (this.counts.get(key) ?? 1) - 1;
          if (n > 0) this.counts.set(key, n);
          else this.counts.delete(key);
        }
      },
    };
  }
}
