import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import {
  type DeliverOutcome,
  deliver,
  recordDeliveryAttempt,
  recordDeliveryGaveUp,
} from "../services/alerts/deliver";

export interface AlertDeliverParams {
  deliveryId: string;
}

/** Six attempts, 10 s apart and doubling (10 s … 160 s): about five minutes of a receiver's outage. */
export const ALERT_DELIVER_RETRIES = { limit: 5, delay: "10 seconds", backoff: "exponential" } as const;

/**
 * One alert delivery to one channel (docs/alerts.md), instance id = the delivery's id. The `deliver`
 * step sends it (services/alerts/deliver.ts) and records each attempt's status code; an answer worth
 * another try (5xx, 408, 429, none) throws so the engine retries the step with backoff; a refusal
 * ends it `failed`. Retries exhausted: `failed` with the last reason.
 */
export class AlertDeliverWorkflow extends WorkflowEntrypoint<Bindings, AlertDeliverParams> {
  override async run(event: Readonly<WorkflowEvent<AlertDeliverParams>>, step: WorkflowStep) {
    const { deliveryId } = event.payload;
    const db = createDb(this.env.DB);
    try {
      const outcome = await step.do(
        "deliver",
        { retries: ALERT_DELIVER_RETRIES, timeout: "1 minute" },
        async (): Promise<DeliverOutcome> => {
          const result = await deliver(this.env, db, deliveryId);
          await recordDeliveryAttempt(db, deliveryId, result);
          if (result.kind === "retry") throw new Error(result.error);
          return result;
        },
      );
      return { status: outcome.kind };
    } catch (error) {
      const reason = `gave up after ${ALERT_DELIVER_RETRIES.limit + 1} attempts: ${error instanceof Error ? error.message : String(error)}`;
      await step.do("record the failure", async () => {
        await recordDeliveryGaveUp(db, deliveryId, reason);
        return true;
      });
      return { status: "failed" as const, reason };
    }
  }
}
