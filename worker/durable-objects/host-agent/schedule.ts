import { createDb } from "../../db/client";
import type { Bindings } from "../../env";
import { hostLostAfterMs, unhealthyAfterMs } from "../../services/alerts/events";
import {
  alertOnHostLost,
  alertOnLastingDiagnosis,
  resolveUnhealthy,
} from "../../services/alerts/host-reports";
import { RECONCILE_EVERY_MS, type ReconcileTrigger } from "../../services/reconcile/host";
import { Timers } from "./timers";

const HOST_LOST_TIMER = "host-lost";
const UNHEALTHY_TIMER = "unhealthy:";
/** the reconciler's next pass while the agent stays connected (services/reconcile/host.ts) */
const RECONCILE_TIMER = "reconcile";

type Db = ReturnType<typeof createDb>;

/**
 * What the HostAgent does later if nothing changes meanwhile: alert on a lost agent or a lasting
 * diagnosis, run the reconciler again. Each is a timer (./timers.ts); the object's one alarm is set
 * to the earliest, and the alarm handler runs what is due (`runDue`).
 */
export class Schedule {
  private readonly timers: Timers;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Bindings,
  ) {
    this.timers = new Timers(ctx.storage.sql);
  }

  /** The agent said hello: its host is not lost. */
  hostBack() {
    this.timers.clear(HOST_LOST_TIMER);
  }

  /** Its pods' teams hear if the agent stays gone (host_lost); a hello first clears the timer. */
  async hostGone() {
    this.timers.start(HOST_LOST_TIMER, Date.now() + hostLostAfterMs(this.env));
    await this.arm();
  }

  /** The reconciler's next pass in RECONCILE_EVERY_MS (while the agent stays connected). */
  async reconcileLater() {
    this.timers.start(RECONCILE_TIMER, Date.now() + RECONCILE_EVERY_MS);
    await this.arm();
  }

  /**
   * Apps that became unhealthy alert if they stay so for ALERT_UNHEALTHY_AFTER_S (a timer each; at
   * once when it is 0); recovered ones cancel theirs and close their incident.
   */
  async healthChanged(db: Db, hostId: string, unhealthy: string[], recovered: string[]) {
    const afterMs = unhealthyAfterMs(this.env);
    for (const podId of recovered) this.timers.clear(`${UNHEALTHY_TIMER}${podId}`);
    await resolveUnhealthy(this.env, db, recovered);
    if (unhealthy.length === 0) return;
    if (afterMs === 0) {
      for (const podId of unhealthy) await alertOnLastingDiagnosis(this.env, db, hostId, podId, 0);
      return;
    }
    for (const podId of unhealthy) this.timers.start(`${UNHEALTHY_TIMER}${podId}`, Date.now() + afterMs);
    await this.arm();
  }

  /** The alarm's part: runs the timers now due, then sets the alarm for the next. */
  async runDue(
    hostId: string | undefined,
    host: { connected: () => boolean; reconcile: (trigger: ReconcileTrigger) => Promise<void> },
  ) {
    const due = this.timers.takeDue(Date.now());
    if (hostId && due.length > 0) {
      const db = createDb(this.env.DB);
      for (const key of due) {
        if (key === HOST_LOST_TIMER) {
          // gone for the whole wait: a reconnect meanwhile cleared the timer
          if (!host.connected()) await alertOnHostLost(this.env, db, hostId, hostLostAfterMs(this.env));
        } else if (key.startsWith(UNHEALTHY_TIMER)) {
          const podId = key.slice(UNHEALTHY_TIMER.length);
          await alertOnLastingDiagnosis(this.env, db, hostId, podId, unhealthyAfterMs(this.env));
        } else if (key === RECONCILE_TIMER && host.connected()) {
          // the next pass is timed from this one's start; a disconnect stops them until the hello
          this.timers.start(RECONCILE_TIMER, Date.now() + RECONCILE_EVERY_MS);
          await host.reconcile("periodic");
        }
      }
    }
    await this.arm();
  }

  /** The object's one alarm at the earliest timer (an earlier alarm, the journal's cleanup, stays). */
  private async arm() {
    const next = this.timers.next();
    if (next === null) return;
    const current = await this.ctx.storage.getAlarm();
    if (current === null || next < current) await this.ctx.storage.setAlarm(next);
  }
}
