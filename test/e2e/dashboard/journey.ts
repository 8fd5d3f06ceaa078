import type { Browser, BrowserContext, Page } from "playwright-core";
import type { DnsDouble } from "../../support/dns";
import type { GitServer } from "../../support/git-server";
import type { ApiClient } from "../support/api";
import type { Stack } from "../support/stack";

/**
 * What the dashboard journey's steps share (test/e2e/dashboard.test.ts fills it in its beforeAll):
 * one stack, one Chromium, the owner signed in from the register page, and what earlier steps made.
 * A step reads its fields inside its tests, never when it registers them.
 */
export interface Journey {
  stack: Stack;
  browser: Browser;
  dns: DnsDouble;
  git: GitServer;
  /** the account registered through the register page; `api` uses its session as a Bearer token */
  owner: { token: string; email: string; api: ApiClient };
  /** the owner's signed-in context and the page the journey walks in */
  context: BrowserContext;
  page: Page;
  /** the owner's page's script errors and console errors other than refused API calls */
  complaints: string[];
  /** the confirm() dialogs the owner's page asked, accepted */
  dialogs: string[];
  /** unique to the run, in names */
  suffix: string;
  /** the Node.js pod on the Build plan, created by the API in beforeAll (logs, deploys, databases, backups) */
  nodePod: string;
  /** a second account (a team of its own) with one static pod, for the every-page pass and its screenshots */
  showcase: { token: string; api: ApiClient; pod: string };
  /** what steps made for later steps */
  made: { staticPod?: string };
}

/** `${stack url}/app${path}` */
export const app = (j: Journey, path: string) => `${j.stack.api}/app${path}`;

/** A value an earlier step makes; a clear failure when that step did not run or failed. */
export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`this step needs ${what}: run the journey from its start`);
  return value;
}

/** The static pod the new-pod step made from the page. */
export const staticPod = (j: Journey) =>
  need(j.made.staticPod, "the static pod made by 'creates a static pod from the page'");
