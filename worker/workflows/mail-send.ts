import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { createDb } from "../db/client";
import type { Bindings } from "../env";
import { loadQueuedMail, recordAttempt, recordFailed, recordSent } from "../services/mail/delivery";
import { type SendOutcome, sendWithResend } from "../services/mail/resend";

export interface MailSendParams {
  mailId: string;
}

/**
 * Seven attempts, 30 s apart and doubling (30 s, 1 min, 2 min … 16 min): a provider outage of about
 * half an hour is ridden out; after that the mail is `failed` with the last reason.
 */
export const MAIL_SEND_RETRIES = { limit: 6, delay: "30 seconds", backoff: "exponential" } as const;

/**
 * One mail through the configured provider (docs/mail.md), instance id = the mail's id:
 * 1. the queued row read from D1 (nothing to do when it is gone or no longer `queued`);
 * 2. `send`: one POST to the provider under the mail's id as idempotency key; a 5xx, 408, 429 or a
 *    network failure records the attempt and throws, so the engine retries the step with backoff;
 *    a refusal (another 4xx) returns, since sending it again cannot help;
 * 3. `sent` with the provider's id, or `failed` with the reason (a refusal, or retries exhausted).
 */
export class MailSendWorkflow extends WorkflowEntrypoint<Bindings, MailSendParams> {
  override async run(event: Readonly<WorkflowEvent<MailSendParams>>, step: WorkflowStep) {
    const { mailId } = event.payload;
    const db = createDb(this.env.DB);
    let outcome: SendOutcome;
    try {
      outcome = await step.do("send", { retries: MAIL_SEND_RETRIES, timeout: "1 minute" }, async () => {
        // Read inside the step: the message (with its one-time link) is never a step's stored output.
        const mail = await loadQueuedMail(db, mailId);
        if (!mail) return { kind: "rejected", error: "not queued" } satisfies SendOutcome;
        const result = await sendWithResend(this.env, mail, mailId);
        if (result.kind === "retry") {
          await recordAttempt(db, mailId, result.error);
          throw new Error(result.error);
        }
        return result;
      });
    } catch (error) {
      const reason = `gave up after ${MAIL_SEND_RETRIES.limit + 1} attempts: ${error instanceof Error ? error.message : String(error)}`;
      await step.do("record the failure", async () => {
        await recordFailed(db, mailId, reason, false);
        return true;
      });
      return { status: "failed" as const, reason };
    }
    if (outcome.kind === "sent") {
      const { providerId } = outcome;
      await step.do("record the delivery", async () => {
        await recordSent(db, mailId, providerId);
        return true;
      });
      return { status: "sent" as const };
    }
    const reason = outcome.error;
    await step.do("record the refusal", async () => {
      await recordFailed(db, mailId, reason, true);
      return true;
    });
    return { status: "failed" as const, reason };
  }
}
