import type { MailMessage } from "./mailer";

export const verifyEmailMail = (to: string, baseUrl: string, token: string): MailMessage => ({
  to,
  subject: "Verify your email address",
  body: [
    "Welcome! Confirm this address with:",
    "",
    `  curl -X POST ${baseUrl}/api/auth/verify-email -H 'content-type: application/json' -d '{"token":"${token}"}'`,
    "",
    `Verification token: ${token}`,
  ].join("\n"),
});

export const resetPasswordMail = (to: string, baseUrl: string, token: string): MailMessage => ({
  to,
  subject: "Reset your password",
  body: [
    "Someone asked to reset the password of this account. If it was you, within one hour:",
    "",
    `  curl -X POST ${baseUrl}/api/auth/reset-password -H 'content-type: application/json' -d '{"token":"${token}","password":"<new password>"}'`,
    "",
    `Reset token: ${token}`,
    "If it was not you, ignore this message: nothing changes.",
  ].join("\n"),
});

export const invitationMail = (
  to: string,
  baseUrl: string,
  token: string,
  teamName: string,
  inviterName: string,
): MailMessage => ({
  to,
  subject: `${inviterName} invited you to ${teamName}`,
  body: [
    `${inviterName} invited you to join the team "${teamName}". The invitation is valid for 7 days.`,
    "",
    `  Details: GET ${baseUrl}/api/invitations/${token}`,
    `  Accept:  POST ${baseUrl}/api/invitations/accept with {"token":"${token}"} (plus email, name, password if you have no account yet)`,
  ].join("\n"),
});
