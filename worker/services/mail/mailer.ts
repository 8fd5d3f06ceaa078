import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { mailOutbox } from "../../db/schema";
import type { Bindings } from "../../env";
import { nowIso } from "../../lib/time";

export interface MailMessage {
  to: string;
  subject: string;
  /** the plain-text part */
  body: string;
  /** the HTML part, when the template has one */
  html?: string;
  /** which template made it (verify_email, reset_password, invitation …), kept with the row */
  kind?: string;
}

/** What services send mail through; `createMailer` picks the implementation from the configuration. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

const rowOf = (message: MailMessage, status: "outbox" | "queued") => ({
  id: newId("mail"),
  to: message.to,
  subject: message.subject,
  body: message.body,
  html: message.html ?? null,
  kind: message.kind ?? "other",
  status,
  createdAt: nowIso(),
});

/** No provider configured: messages stay in D1's `mail_outbox`; `npm run mail:outbox` prints them. */
export class OutboxMailer implements Mailer {
  constructor(private readonly db: Db) {}

  async send(message: MailMessage): Promise<void> {
    await this.db.insert(mailOutbox).values(rowOf(message, "outbox"));
  }
}

/**
 * A provider configured (`MAIL_API_KEY`, docs/mail.md): the mail is recorded as `queued` and handed
 * to the mail-send Workflow, which sends it through the provider and retries with backoff. The
 * request that caused the mail never waits on the provider nor fails because of it: should even the
 * Workflow's start fail, the row stays `queued` and the cron's `mail-redispatch` starts it later.
 */
export class ProviderMailer implements Mailer {
  constructor(
    private readonly db: Db,
    private readonly env: Bindings,
  ) {}

  async send(message: MailMessage): Promise<void> {
    const row = rowOf(message, "queued");
    await this.db.insert(mailOutbox).values(row);
    try {
      await this.env.MAIL_SEND.create({ id: row.id, params: { mailId: row.id } });
    } catch (error) {
      console.error(
        JSON.stringify({
          msg: "mail-send workflow not started; the cron retries",
          mailId: row.id,
          error: String(error),
        }),
      );
    }
  }
}

/** Whether mail leaves the service: a provider's API key is set. */
export const mailProviderConfigured = (env: Bindings): boolean => Boolean(env.MAIL_API_KEY);

export const createMailer = (db: Db, env: Bindings): Mailer =>
  mailProviderConfigured(env) ? new ProviderMailer(db, env) : new OutboxMailer(db);
