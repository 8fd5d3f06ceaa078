import { newId } from "../../../shared/ids";
import type { Db } from "../../db/client";
import { mailOutbox } from "../../db/schema";
import { nowIso } from "../../lib/time";

export interface MailMessage {
  to: string;
  subject: string;
  body: string;
}

/** The mail provider interface. Production plugs a provider in here; with none, mail goes to the outbox. */
export interface Mailer {
  send(message: MailMessage): Promise<void>;
}

/** Keeps messages in D1's `mail_outbox`; `npm run mail:outbox` prints them. */
export class OutboxMailer implements Mailer {
  constructor(private readonly db: Db) {}

  async send(message: MailMessage): Promise<void> {
    await this.db.insert(mailOutbox).values({ id: newId("mail"), ...message, createdAt: nowIso() });
  }
}

export const createMailer = (db: Db): Mailer => new OutboxMailer(db);
