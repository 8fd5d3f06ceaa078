import type { MailMessage } from "./mailer";

/**
 * Every mail the service sends is one of these templates (docs/mail.md): a plain-text part and an
 * HTML part made from the same paragraphs, and a link to the dashboard's page for it. Each paragraph
 * is escaped whole in the HTML part, so a name a user chose (a team's, a pod's, an inviter's) is
 * text there, never markup; subjects lose control characters (a name cannot add a header line).
 */
export interface MailContent {
  to: string;
  kind: string;
  subject: string;
  /** plain paragraphs; user-chosen names go in as they are and are escaped for HTML here */
  paragraphs: string[];
  /** the dashboard's page for it */
  action?: { label: string; url: string };
  /** paragraphs after the link (what to do if it was not you, the API route …) */
  after?: string[];
}

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);

// biome-ignore lint/suspicious/noControlCharactersInRegex: removing control characters is the point
const oneLine = (text: string) => text.replace(/[\u0000-\u001f\u007f]+/g, " ").slice(0, 200);

export function renderMail(content: MailContent): MailMessage {
  const { paragraphs, action, after = [] } = content;
  const text = [...paragraphs, ...(action ? [`${action.label}: ${action.url}`] : []), ...after].join("\n\n");
  const p = (t: string) => `<p style="margin:0 0 16px">${escapeHtml(t)}</p>`;
  const html = [
    '<!doctype html><html><body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#1a1a1a;max-width:560px">',
    ...paragraphs.map(p),
    ...(action
      ? [
          `<p style="margin:0 0 16px"><a href="${escapeHtml(action.url)}" style="display:inline-block;padding:10px 16px;background:#2450d8;color:#fff;border-radius:6px;text-decoration:none">${escapeHtml(action.label)}</a></p>`,
          `<p style="margin:0 0 16px;font-size:13px;color:#555">Or open this address: ${escapeHtml(action.url)}</p>`,
        ]
      : []),
    ...after.map(p),
    "</body></html>",
  ].join("\n");
  return { to: content.to, subject: oneLine(content.subject), body: text, html, kind: content.kind };
}

/** The dashboard's page at `path` with the token as its query (the lead's /app pages). */
const dashboardLink = (baseUrl: string, path: string) => `${baseUrl.replace(/\/+$/, "")}${path}`;

export const verifyEmailMail = (to: string, baseUrl: string, token: string): MailMessage =>
  renderMail({
    to,
    kind: "verify_email",
    subject: "Verify your email address",
    paragraphs: ["Welcome! Confirm that this address is yours; the link is valid for 24 hours."],
    action: {
      label: "Verify this address",
      url: dashboardLink(baseUrl, `/app/verify-email?token=${encodeURIComponent(token)}`),
    },
    after: [`From a script: POST ${baseUrl}/api/auth/verify-email with {"token":"${token}"}.`],
  });

export const resetPasswordMail = (to: string, baseUrl: string, token: string): MailMessage =>
  renderMail({
    to,
    kind: "reset_password",
    subject: "Reset your password",
    paragraphs: [
      "Someone asked to reset the password of this account. If it was you, choose a new one within the hour.",
    ],
    action: {
      label: "Choose a new password",
      url: dashboardLink(baseUrl, `/app/reset-password?token=${encodeURIComponent(token)}`),
    },
    after: [
      "If it was not you, ignore this message: nothing changes.",
      `From a script: POST ${baseUrl}/api/auth/reset-password with {"token":"${token}","password":"<new password>"}.`,
    ],
  });

export const invitationMail = (
  to: string,
  baseUrl: string,
  token: string,
  teamName: string,
  inviterName: string,
): MailMessage =>
  renderMail({
    to,
    kind: "invitation",
    subject: `${inviterName} invited you to ${teamName}`,
    paragraphs: [
      `${inviterName} invited you to join the team "${teamName}". The invitation is valid for 7 days.`,
    ],
    action: {
      label: "See the invitation",
      url: dashboardLink(baseUrl, `/app/invitations/${encodeURIComponent(token)}`),
    },
    after: [
      `From a script: GET ${baseUrl}/api/invitations/${token} for its details, POST ${baseUrl}/api/invitations/accept with {"token":"${token}"} (plus email, name, password if you have no account yet) to accept.`,
    ],
  });

/** An alert to a team's members (docs/alerts.md): the summary as text, the pod's dashboard page. */
export const alertMail = (
  to: string,
  alert: {
    state: "firing" | "resolved" | "test";
    teamName: string;
    podName: string | null;
    summary: string;
    url: string;
  },
): MailMessage =>
  renderMail({
    to,
    kind: "alert",
    subject:
      alert.state === "test"
        ? `Test alert for ${alert.teamName}`
        : `${alert.state === "resolved" ? "Resolved" : "Alert"}: ${alert.podName ?? alert.teamName} (${alert.teamName})`,
    paragraphs: [
      alert.summary,
      alert.state === "resolved"
        ? `This incident of the team "${alert.teamName}" is over.`
        : `You get this because you are a member of the team "${alert.teamName}" and its owner chose to alert you by e-mail.`,
    ],
    action: { label: alert.podName ? "Open the pod" : "Open the team", url: alert.url },
  });
