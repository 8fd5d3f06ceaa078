import type { Context } from "hono";
import { raw } from "hono/html";
import type { Child } from "hono/jsx";
import type { AppEnv } from "../http/app-env";
import { serviceContext } from "../http/router";
import type { Caller } from "../services/auth/caller";
import type { ServiceContext } from "../services/context";
import { listTeams, type TeamView } from "../services/teams/teams";
import { type AssetName, assetUrl } from "./assets";
import { ApiForm } from "./components/api-form";

/** What a signed-in page is rendered from: the service context, the caller and the API's base URL. */
export interface PageContext {
  ctx: ServiceContext;
  caller: Caller;
  base: string;
  teams: TeamView[];
}

export async function pageContext(c: Context<AppEnv>): Promise<PageContext> {
  const ctx = serviceContext(c);
  const caller = c.get("caller");
  return { ctx, caller, base: c.env.PUBLIC_URL, teams: await listTeams(ctx, caller.user.id) };
}

/** What a page's `<head>` names: its title and the files it loads. */
export interface HeadProps {
  title: string;
  /** scripts beyond the shared two (dash.js, htmx), e.g. the terminal's or the charts' */
  scripts?: AssetName[];
  styles?: AssetName[];
}

/**
 * The `<head>` every page shares. Scripts are deferred files of this origin (the CSP allows
 * nothing else); htmx is told not to inject styles or evaluate attribute code, which the CSP would
 * refuse anyway. A page that streams (./stream-page.tsx) sends it before its data is read.
 */
export function Head({ title, scripts = [], styles = [] }: HeadProps) {
  return (
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <link rel="icon" href="data:," />
      <meta
        name="htmx-config"
        content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true}'
      />
      <title>{`${title} · podhost`}</title>
      <link rel="stylesheet" href={assetUrl("dashboard.css")} />
      {styles.map((s) => (
        <link rel="stylesheet" href={assetUrl(s)} />
      ))}
      <script src={assetUrl("htmx.js")} defer />
      <script src={assetUrl("dash.js")} defer />
      {scripts.map((s) => (
        <script src={assetUrl(s)} defer />
      ))}
    </head>
  );
}

/** What comes before a page's `<head>`, as text. */
export const DOCUMENT_START = '<!doctype html><html lang="en">';

/** The HTML document every page shares: the head, then the page's `<body>`. */
function Document({ children, ...head }: HeadProps & { children: Child }) {
  return (
    <>
      {raw("<!doctype html>")}
      <html lang="en">
        <Head {...head} />
        {children}
      </html>
    </>
  );
}

type Section = "pods" | "team" | "account" | "billing" | "affiliates";

interface PageProps extends HeadProps {
  page: PageContext;
  section: Section;
  children: Child;
}

/** A signed-in page: the header (sections, team switcher, user menu) above the page's own content. */
export function Page({ page, section, children, ...head }: PageProps) {
  return (
    <Document {...head}>
      <PageBody page={page} section={section}>
        {children}
      </PageBody>
    </Document>
  );
}

/** A signed-in page's `<body>`: the header, then the page's content in `<main>`. */
export function PageBody({ page, section, children }: Omit<PageProps, keyof HeadProps>) {
  const { caller, teams } = page;
  const nav: [Section, string, string][] = [
    ["pods", "Pods", "/app"],
    ["team", "Team", "/app/team"],
    ["billing", "Billing", "/app/billing"],
    ["account", "Account", "/app/account"],
  ];
  return (
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/app">
          podhost
        </a>
        <nav aria-label="Sections">
          {nav.map(([key, label, href]) => (
            <a href={href} aria-current={key === section ? "page" : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <ApiForm action="/api/teams/switch" then="reload" class="team-switch">
          <label>
            <span class="visually-hidden">Active team</span>
            <select name="team_id" data-submit-on-change>
              {teams.map((t) => (
                <option value={t.id} selected={t.id === caller.teamId}>
                  {t.name}
                </option>
              ))}
            </select>
          </label>
        </ApiForm>
        <details class="menu">
          <summary>{caller.user.email}</summary>
          <div class="menu-items">
            <a href="/app/account">Account</a>
            <a href="/app/account/tokens">API tokens</a>
            <a href="/app/affiliates">Affiliates</a>
            <a href="/docs">API reference</a>
            <ApiForm action="/api/auth/logout" then="go:/app/sign-in">
              <button type="submit" class="link">
                Sign out
              </button>
            </ApiForm>
          </div>
        </details>
      </header>
      {caller.user.email_verified ? null : (
        <div class="banner" role="status">
          Your e-mail address is not verified yet: look for our mail, or{" "}
          <ApiForm action="/api/auth/resend-verification" then="show" success="Sent." class="inline">
            <button type="submit" class="link">
              send it again
            </button>
          </ApiForm>
          .
        </div>
      )}
      <main id="main">{children}</main>
    </body>
  );
}

/** A signed-out page (sign-in, register, the mailed links): the brand and one card. */
export function AuthPage({ title, children }: { title: string; children: Child }) {
  return (
    <Document title={title}>
      <AuthBody>{children}</AuthBody>
    </Document>
  );
}

/** A signed-out page's `<body>`. */
export function AuthBody({ children }: { children: Child }) {
  return (
    <body class="auth">
      <main id="main" class="card narrow">
        <a class="brand" href="/app">
          podhost
        </a>
        {children}
      </main>
    </body>
  );
}
