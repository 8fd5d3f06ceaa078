import { introspectWorkflow } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { newId } from "../../shared/ids";
import { createDb } from "../../worker/db/client";
import { mailOutbox } from "../../worker/db/schema";
import { redispatchQueuedMail } from "../../worker/services/mail/delivery";
import { createMailer } from "../../worker/services/mail/mailer";
import { verifyEmailMail } from "../../worker/services/mail/templates";
import { call, registerUser, uniqueEmail } from "./support/client";
import { first } from "./support/db";
import { createTeam, invite } from "./support/teams";

/**
 * Mail through the configured provider (docs/mail.md): vitest.config.ts points MAIL_API_BASE at
 * Resend's double (test/support/mail-api.ts), so every mail below really leaves the Worker through
 * the mail-send Workflow and arrives there, or is refused there.
 */

const DOUBLE = env.MAIL_API_BASE ?? "";
const PUBLIC = env.PUBLIC_URL.replace(/\/+$/, "");

interface Delivered {
  id: string;
  from: string;
  to: string[];
  subject: string;
  text: string | null;
  html: string | null;
  idempotency_key: string | null;
}

async function doubleGet<T>(path: string): Promise<T> {
  const res = await fetch(`${DOUBLE}${path}`);
  return ((await res.json()) as { data: T }).data;
}

/** The mails the double delivered to `to`, waiting (up to 20 s) until there are `count`. */
async function deliveredTo(to: string, count = 1): Promise<Delivered[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const mails = await doubleGet<Delivered[]>(`/__double/emails?to=${encodeURIComponent(to)}`);
    if (mails.length >= count || Date.now() > deadline) return mails;
    await new Promise((r) => setTimeout(r, 100));
  }
}

const requestsFor = (to: string) =>
  doubleGet<{ status: number }[]>(`/__double/requests?to=${encodeURIComponent(to)}`);

async function failNext(to: string, status: number, times: number) {
  await fetch(`${DOUBLE}/__double/failures`, {
    method: "POST",
    body: JSON.stringify({ to, status, times }),
  });
}

interface MailRow {
  id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  provider_id: string | null;
  kind: string;
}

const rowOf = (to: string) =>
  first<MailRow>(
    'SELECT id, status, attempts, last_error, provider_id, kind FROM mail_outbox WHERE "to" = ? ORDER BY created_at DESC, rowid DESC',
    to.toLowerCase(),
  );

/** The link in a mail's text that starts with `prefix`, whole. */
function linkIn(text: string | null, prefix: string): string {
  const at = text?.indexOf(prefix) ?? -1;
  expect(at, `no ${prefix} in ${text}`).toBeGreaterThanOrEqual(0);
  return /^\S+/.exec((text ?? "").slice(at))?.[0] ?? "";
}

describe("each mail kind reaches the provider with its recipient and the dashboard's link", () => {
  it("verification: a link to /app/verify-email whose token verifies the address", async () => {
    const u = await registerUser();
    const [mail, ...more] = await deliveredTo(u.user.email);
    expect(more).toEqual([]);
    expect(mail?.to).toEqual([u.user.email]);
    expect(mail?.from).toBe("podhost <noreply@podhost.test>");
    expect(mail?.subject).toBe("Verify your email address");
    const link = linkIn(mail?.text ?? null, `${PUBLIC}/app/verify-email?token=`);
    expect(mail?.html).toContain(`href="${link}"`);
    const token = new URL(link).searchParams.get("token");
    const res = await call("POST", "/api/auth/verify-email", { token });
    expect(res.status).toBe(200);
    expect((await call("GET", "/api/auth/user", undefined, { token: u.token })).body.email_verified).toBe(
      true,
    );
    const row = await rowOf(u.user.email);
    expect(row).toMatchObject({ status: "sent", attempts: 1, kind: "verify_email", provider_id: mail?.id });
    // the mail's id is the idempotency key: a retry after a lost answer cannot send it twice
    expect(mail?.idempotency_key).toBe(row?.id);
  });

  it("password reset: a link to /app/reset-password whose token sets the new password", async () => {
    const u = await registerUser();
    await deliveredTo(u.user.email);
    expect((await call("POST", "/api/auth/forgot-password", { email: u.user.email })).status).toBe(200);
    const mails = await deliveredTo(u.user.email, 2);
    const reset = mails.find((m) => m.subject === "Reset your password");
    const link = linkIn(reset?.text ?? null, `${PUBLIC}/app/reset-password?token=`);
    expect(reset?.html).toContain(`href="${link}"`);
    const token = new URL(link).searchParams.get("token");
    const done = await call("POST", "/api/auth/reset-password", { token, password: "a brand new password" });
    expect(done.status).toBe(200);
    const login = await call("POST", "/api/auth/login", {
      email: u.user.email,
      password: "a brand new password",
    });
    expect(login.status).toBe(200);
  });

  it("invitation: a link to /app/invitations/{token}, the team's and inviter's names escaped in HTML", async () => {
    const hostile = "<img src=x onerror=alert(1)>";
    const owner = await registerUser(`Mallory <script>alert(2)</script>`);
    const team = await createTeam(owner, hostile);
    const email = uniqueEmail("invitee");
    const inv = await invite(owner, team.id, email);
    const [mail] = await deliveredTo(email);
    expect(mail?.to).toEqual([email]);
    const link = linkIn(mail?.text ?? null, `${PUBLIC}/app/invitations/`);
    expect(link).toBe(`${PUBLIC}/app/invitations/${inv.token}`);
    expect(mail?.html).toContain(`href="${link}"`);
    // text is text: the names as they are; HTML: escaped, no tag of theirs survives
    expect(mail?.text).toContain(hostile);
    expect(mail?.html).toContain("&lt;img src=x onerror=alert(1)&gt;");
    expect(mail?.html).toContain("&lt;script&gt;alert(2)&lt;/script&gt;");
    expect(mail?.html).not.toContain("<img");
    expect(mail?.html).not.toContain("<script");
    expect((await call("GET", `/api/invitations/${inv.token}`)).status).toBe(200);
    expect(await rowOf(email)).toMatchObject({ status: "sent", kind: "invitation" });
  });

  it("a subject loses the control characters a name could carry (no extra header line)", () => {
    const mail = verifyEmailMail("a@example.test", PUBLIC, "t");
    expect(mail.subject).not.toMatch(/[\r\n]/);
  });
});

describe("a send failure never fails the request that caused it", () => {
  it("a provider 5xx is retried with backoff and the mail delivered later", async () => {
    const email = uniqueEmail("flaky");
    await failNext(email, 500, 2);
    await using introspector = await introspectWorkflow(env.MAIL_SEND);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    const res = await call("POST", "/api/auth/register", {
      email,
      password: "correct horse battery",
      name: "F",
    });
    expect(res.status).toBe(201);
    // the registration's one mail, its instance the only one this file started since
    expect(introspector.get()).toHaveLength(1);
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    expect((await requestsFor(email)).map((r) => r.status)).toEqual([500, 500, 200]);
    expect(await deliveredTo(email)).toHaveLength(1);
    const after = await rowOf(email);
    expect(after).toMatchObject({ status: "sent", attempts: 3 });
    expect(after?.last_error).toContain("500");
  });

  it("a provider 4xx is recorded as failed after one attempt, never retried", async () => {
    const email = uniqueEmail("refused");
    await failNext(email, 422, 1);
    await using introspector = await introspectWorkflow(env.MAIL_SEND);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    const res = await call("POST", "/api/auth/register", {
      email,
      password: "correct horse battery",
      name: "R",
    });
    expect(res.status).toBe(201);
    // the registration's one mail, its instance the only one this file started since
    expect(introspector.get()).toHaveLength(1);
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    const after = await rowOf(email);
    expect(after).toMatchObject({ status: "failed", attempts: 1 });
    expect(after?.last_error).toContain("422");
    expect(after?.last_error).toContain("validation_error");
    expect((await requestsFor(email)).map((r) => r.status)).toEqual([422]);
    expect(await doubleGet(`/__double/emails?to=${encodeURIComponent(email)}`)).toEqual([]);
  });

  it("a provider down for good: the request succeeds, the mail ends failed after its retries", async () => {
    const email = uniqueEmail("down");
    await failNext(email, 503, 1000);
    await using introspector = await introspectWorkflow(env.MAIL_SEND);
    await introspector.modifyAll(async (m) => {
      await m.disableRetryDelays();
    });
    const res = await call("POST", "/api/auth/register", {
      email,
      password: "correct horse battery",
      name: "D",
    });
    expect(res.status).toBe(201);
    // the registration's one mail, its instance the only one this file started since
    expect(introspector.get()).toHaveLength(1);
    for (const instance of introspector.get()) await instance.waitForStatus("complete");
    const after = await rowOf(email);
    expect(after).toMatchObject({ status: "failed", attempts: 7 });
    expect(after?.last_error).toMatch(/gave up after 7 attempts: provider answered 503/);
    expect(await requestsFor(email)).toHaveLength(7);
  });

  it("a queued mail whose Workflow never started is sent by the cron's redispatch", async () => {
    const email = uniqueEmail("stranded");
    const id = newId("mail");
    const db = createDb(env.DB);
    await db.insert(mailOutbox).values({
      id,
      to: email,
      subject: "Stranded",
      body: "hello",
      kind: "other",
      status: "queued",
      createdAt: new Date(Date.now() - 11 * 60_000).toISOString(),
    });
    expect(await redispatchQueuedMail(env, db, Date.now())).toBeGreaterThanOrEqual(1);
    const [mail] = await deliveredTo(email);
    expect(mail?.subject).toBe("Stranded");
    expect(mail?.idempotency_key).toBe(id);
  });
});

describe("no provider configured", () => {
  it("mail stays in the outbox and nothing leaves", async () => {
    const email = uniqueEmail("outbox");
    const db = createDb(env.DB);
    await createMailer(db, { ...env, MAIL_API_KEY: undefined }).send(verifyEmailMail(email, PUBLIC, "tok"));
    expect(await rowOf(email)).toMatchObject({ status: "outbox", attempts: 0, kind: "verify_email" });
    await new Promise((r) => setTimeout(r, 300));
    expect(await requestsFor(email)).toEqual([]);
  });
});
