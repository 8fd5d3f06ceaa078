import type { Bindings } from "../../env";

/**
 * Resend's send endpoint (https://resend.com/docs/api-reference/emails/send-email), spoken exactly:
 * `POST {MAIL_API_BASE}/emails` with `Authorization: Bearer {MAIL_API_KEY}`, a JSON body
 * `{from, to: [..], subject, text, html}` and an `Idempotency-Key` (Resend keeps it 24 hours, so a
 * retry after a lost answer never sends the mail twice); `200 {id}` back, or an error object
 * `{statusCode, name, message}`.
 */
export const DEFAULT_MAIL_API_BASE = "https://api.resend.com";

/** Resend answers in well under a second; a hung connection must not hold a Workflow step forever. */
const SEND_TIMEOUT_MS = 15_000;

export interface ProviderMail {
  to: string;
  subject: string;
  text: string;
  html: string | null;
}

export type SendOutcome =
  | { kind: "sent"; providerId: string }
  /** the provider refused this mail for good (a 4xx but 408/429): sending it again cannot help */
  | { kind: "rejected"; error: string }
  /** the provider could not take it now (5xx, 408, 429, network): worth another attempt later */
  | { kind: "retry"; error: string };

/** The sender when `MAIL_FROM` is unset: `podhost <noreply@{the host of PUBLIC_URL}>`. */
export function mailFrom(env: Pick<Bindings, "MAIL_FROM" | "PUBLIC_URL">): string {
  if (env.MAIL_FROM) return env.MAIL_FROM;
  return `podhost <noreply@${new URL(env.PUBLIC_URL).hostname}>`;
}

export async function sendWithResend(
  env: Pick<Bindings, "MAIL_API_BASE" | "MAIL_API_KEY" | "MAIL_FROM" | "PUBLIC_URL">,
  mail: ProviderMail,
  idempotencyKey: string,
): Promise<SendOutcome> {
  const base = (env.MAIL_API_BASE ?? DEFAULT_MAIL_API_BASE).replace(/\/+$/, "");
  const body: Record<string, unknown> = {
    from: mailFrom(env),
    to: [mail.to],
    subject: mail.subject,
    text: mail.text,
  };
  if (mail.html !== null) body.html = mail.html;
  let res: Response;
  try {
    res = await fetch(`${base}/emails`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${env.MAIL_API_KEY ?? ""}`,
        "content-type": "application/json",
        "idempotency-key": idempotencyKey,
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
    });
  } catch (error) {
    return {
      kind: "retry",
      error: `provider unreachable: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  // Resend's answers are small JSON objects; a longer one is not worth reading whole.
  const text = (await res.text()).slice(0, 4096);
  if (res.ok) {
    const id = parseJson(text)?.id;
    return typeof id === "string"
      ? { kind: "sent", providerId: id }
      : { kind: "retry", error: `provider answered ${res.status} without an id` };
  }
  const parsed = parseJson(text);
  const detail = [parsed?.name, parsed?.message].filter((v) => typeof v === "string").join(": ");
  const error = `provider answered ${res.status}${detail ? ` (${detail.slice(0, 300)})` : ""}`;
  const transient = res.status >= 500 || res.status === 408 || res.status === 429;
  return transient ? { kind: "retry", error } : { kind: "rejected", error };
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === "object" ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
