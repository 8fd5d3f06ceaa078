import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDnsDouble } from "../support/dns";
import { startGitServer } from "../support/git-server";
import { everyPageSteps } from "./dashboard/every-page";
import { domainsSteps, feedbackSteps } from "./dashboard/feedback";
import { deleteSteps, envSteps, filesSteps } from "./dashboard/files-env";
import { app, type Journey } from "./dashboard/journey";
import { logsSteps } from "./dashboard/logs";
import { newPodSteps } from "./dashboard/new-pod";
import { backupsSteps, databasesSteps, deploysSteps } from "./dashboard/pod-data";
import { teamSteps, tokenSteps } from "./dashboard/team";
import { terminalSteps } from "./dashboard/terminal";
import { apiClient, signUp } from "./support/api";
import { launchChromium } from "./support/browser";
import { recordComplaints, signedInContext } from "./support/dashboard";
import { waitForHostOnline } from "./support/pods";
import { startStack } from "./support/stack";

/**
 * The dashboard in Debian's Chromium against the real stack (Worker, agent, Docker, ingress, the
 * local git server, the DNS double), as one journey (#26 item 8): register → create a static pod and
 * watch it become running without reloading → open its URL → edit index.html in the file editor →
 * the terminal → live logs of a Node pod → an env var and a restart → connect the git server, deploy,
 * watch the build log stream, roll back → PostgreSQL and its credentials → back up, restore → a
 * domain's TXT record → feedback pinned on the pod's page and triaged → a teammate invited who
 * accepts → an API token shown once → the pod deleted by typing its name; then every page (CSP,
 * axe-core, both widths, screenshots with PODHOST_SCREENSHOTS). One stack and one Chromium for all;
 * the steps live in test/e2e/dashboard/ and run in order, each on what earlier steps made (run one
 * with `-t`, and it says which earlier step it needs). Attacker tests act as accounts of their own.
 */

const j = {
  made: {},
  complaints: [],
  dialogs: [],
  suffix: Date.now().toString(36).slice(-5),
} as unknown as Journey;
const PASSWORD = "correct horse battery";

beforeAll(async () => {
  // domain verification asks the DNS-over-HTTPS double on loopback (test/support/dns.ts)
  j.dns = await startDnsDouble();
  [j.stack, j.browser, j.git] = await Promise.all([
    startStack("dash", { publicUrl: true, vars: { DNS_RESOLVER_URL: j.dns.resolverUrl } }),
    launchChromium(),
    startGitServer(),
  ]);

  // register from the register page: the owner's browser holds the session the page set
  j.context = await signedInContext(j.browser, j.stack.api, undefined, { width: 1280, height: 720 });
  j.page = await j.context.newPage();
  recordComplaints(j.page, j.complaints, { ignoreFailedLoads: true });
  j.page.on("dialog", (d) => {
    j.dialogs.push(d.message());
    void d.accept();
  });
  const email = `owner-${j.suffix}@example.test`;
  await j.page.goto(app(j, "/register"));
  await j.page.getByLabel("Your name").fill("Journey Owner");
  await j.page.getByLabel("E-mail").fill(email);
  await j.page.getByLabel(/^Password/).fill(PASSWORD);
  await j.page.getByRole("button", { name: "Create account" }).click();
  await j.page.waitForURL(app(j, ""), { timeout: 30_000 });
  const session = (await j.context.cookies(j.stack.api)).find((c) => c.name === "pod_session");
  if (!session) throw new Error("registering set no pod_session cookie");
  j.owner = { token: session.value, email, api: apiClient(j.stack.api, session.value) };
  await waitForHostOnline(j.owner.api);

  // made now, used later, so they are running by then: the Node.js pod (logs, deploys, databases,
  // backups) and the showcase account's pod (the every-page pass)
  j.nodePod = `dash-node-${j.suffix}`;
  const showcase = await signUp(j.stack.api, "Ada Lovelace");
  j.showcase = { token: showcase.token, api: showcase.api, pod: "showcase" };
  const [node, shown] = await Promise.all([
    j.owner.api.post("/api/pods", { name: j.nodePod, preset: "nodejs", plan_slug: "build" }),
    showcase.api.post("/api/pods", { name: "showcase", preset: "static" }),
  ]);
  expect(node.status, JSON.stringify(node.body)).toBe(202);
  expect(shown.status, JSON.stringify(shown.body)).toBe(202);
}, 300_000);

afterAll(async () => {
  await j.context?.close().catch(() => undefined);
  await j.browser?.close();
  await j.stack?.stop();
  await j.git?.close();
  await j.dns?.close();
}, 120_000);

describe("the dashboard journey in a real browser", () => {
  it("registered from the register page: the session cookie is set and the pods list greets the owner", async () => {
    expect(j.page.url()).toBe(app(j, ""));
    const me = await j.owner.api.get("/api/auth/user");
    expect(me.status).toBe(200);
    expect(JSON.stringify(me.body)).toContain(j.owner.email);
    await expect(j.page.locator("header").textContent()).resolves.toContain("Journey Owner");
  });

  newPodSteps(j);
  filesSteps(j);
  terminalSteps(j);
  logsSteps(j);
  envSteps(j);
  deploysSteps(j);
  databasesSteps(j);
  backupsSteps(j);
  domainsSteps(j);
  feedbackSteps(j);
  teamSteps(j);
  tokenSteps(j);
  deleteSteps(j);
  everyPageSteps(j);
});
