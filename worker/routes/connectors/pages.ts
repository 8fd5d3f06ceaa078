import type { ConsentDescription } from "@cloudflare/workers-oauth-provider";
import { html } from "hono/html";

/**
 * The pages of the authorization endpoint, server-rendered. `html` escapes every interpolated
 * value: the client's name, URI and redirect come from dynamic registration, chosen by whoever
 * registered the client.
 */

const layout = (title: string, body: ReturnType<typeof html>) => html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;line-height:1.5;color:#1b1b1b}
h1{font-size:1.4rem}label{display:block;margin:.6rem 0}input[type=email],input[type=password]{width:100%;padding:.4rem}
button{padding:.5rem 1.2rem;margin-right:.5rem}.warn{background:#fff4e5;padding:.6rem;border-left:4px solid #f0a020}
.error{background:#fdecea;padding:.6rem;border-left:4px solid #d33}code{background:#f3f3f3;padding:0 .2rem}
</style>
</head>
<body>${body}</body>
</html>`;

/**
 * Signed out: email and password, posted back to `action` (/authorize, or /device for a device login)
 * with the page's query.
 */
export const signInPage = (query: string, error?: string, action = "/authorize") =>
  layout(
    "Sign in to podhost",
    html`<h1>Sign in to podhost</h1>
<p>An app asks to connect to your podhost account. Sign in first; you will then be asked whether to allow it.</p>
${error ? html`<p class="error">${error}</p>` : ""}
<form method="post" action="${action}">
<input type="hidden" name="intent" value="sign_in">
<input type="hidden" name="oauth_query" value="${query}">
<label>Email <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form>`,
  );

export interface ConsentFacts {
  details: ConsentDescription;
  handle: string;
  userEmail: string;
  teamName: string;
}

/** What the MCP authorization spec asks a consent page to show, and Allow / Deny. */
export const consentPage = ({ details, handle, userEmail, teamName }: ConsentFacts) =>
  layout(
    `Allow ${details.clientName}?`,
    html`<h1>Allow <strong>${details.clientName}</strong> to use your podhost account?</h1>
<p>Signed in as <strong>${userEmail}</strong>.</p>
<p>It will act with <strong>full power on the team ${teamName}</strong>: create, change and delete its
pods, read and write their files, run commands in them. It cannot create API tokens. The access lasts
30 days; revoke it any time with <code>DELETE /api/connectors/{id}</code>.</p>
<p>This app registered itself; its name is not verified. Access will be sent to
<strong>${details.redirectHost}</strong>.</p>
${
  details.redirectIsLoopback
    ? html`<p class="warn"><strong>This sends access to an app on your computer.</strong> Continue only if you just
started connecting from it.</p>`
    : ""
}
<form method="post" action="/authorize">
<input type="hidden" name="intent" value="consent">
<input type="hidden" name="handle" value="${handle}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );

/** A request that cannot go back to its client (or whose page expired): said here, never redirected. */
export const errorPage = (message: string) =>
  layout("Cannot connect", html`<h1>Cannot connect this app</h1><p class="error">${message}</p>`);

/** The device login's page (RFC 8628): type the code the device shows. */
export const deviceCodePage = (code: string, error?: string) =>
  layout(
    "Connect a device",
    html`<h1>Connect a device</h1>
<p>Enter the code shown on the device you are signing in on (for example by <code>podhost login --device</code>).</p>
${error ? html`<p class="error">${error}</p>` : ""}
<form method="post" action="/device">
<input type="hidden" name="intent" value="lookup">
<label>Code <input type="text" name="user_code" value="${code}" autocomplete="off" autocapitalize="characters" spellcheck="false" required></label>
<button type="submit">Continue</button>
</form>`,
  );

export interface DeviceConsentFacts {
  clientName: string;
  code: string;
  userEmail: string;
  teamName: string;
}

/** The code is valid: who asks, for which account and team, and Allow / Deny. */
export const deviceConsentPage = ({ clientName, code, userEmail, teamName }: DeviceConsentFacts) =>
  layout(
    `Allow ${clientName}?`,
    html`<h1>Allow <strong>${clientName}</strong> on the device showing <code>${code}</code>?</h1>
<p>Signed in as <strong>${userEmail}</strong>.</p>
<p class="warn"><strong>Only continue if you started this login yourself and the device shows this very code.</strong>
Someone who sent you a code is asking for your account.</p>
<p>The device will act with <strong>full power on the team ${teamName}</strong>: create, change and delete its
pods, read and write their files, run commands in them. It cannot create API tokens. The access lasts
30 days; <code>podhost logout</code> on the device, or <code>DELETE /api/connectors/{id}</code>, ends it.</p>
<p>This app registered itself; its name is not verified.</p>
<form method="post" action="/device">
<input type="hidden" name="intent" value="decide">
<input type="hidden" name="user_code" value="${code}">
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );

export const deviceDonePage = (approved: boolean, clientName: string) =>
  layout(
    approved ? "Device connected" : "Device refused",
    approved
      ? html`<h1>Device connected</h1><p><strong>${clientName}</strong> is signed in. You can close this page and go back to the device.</p>`
      : html`<h1>Device refused</h1><p>The login of <strong>${clientName}</strong> was denied; nothing was granted.</p>`,
  );
