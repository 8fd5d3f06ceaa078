import { describe, expect, it } from "vitest";
import { auditPages, watchAttribute } from "../support/dashboard";
import { waitForPodStatus } from "../support/pods";
import { app, type Journey, staticPod } from "./journey";
import { served } from "./new-pod";

/** The static pod's Files tab: what the browser does is the Files API's doing, and the pod shows it. */
export function filesSteps(j: Journey) {
  describe("files", () => {
    it("edits index.html in the file editor, and the pod serves the change", async () => {
      const { page } = j;
      const pod = staticPod(j);
      const res = await page.goto(app(j, `/pods/${pod}/files`));
      expect(res?.status()).toBe(200);
      const listed = page.getByRole("link", { name: "index.html", exact: true });
      await listed.or(page.getByText("The folder cannot be listed")).first().waitFor();
      expect(await page.locator("main > p.form-error").allTextContents()).toEqual([]);
      await listed.click();
      const editor = page.locator("textarea[name=content]");
      await editor.waitFor();
      expect(await editor.inputValue()).toContain("<");
      const marker = `edited in the dashboard ${Date.now()}`;
      // a whole document: the feedback step's widget is injected into its body
      await editor.fill(
        `<!doctype html>\n<html lang="en">\n<head><title>Edited</title></head>\n<body>\n<h1>${marker}</h1>\n</body>\n</html>\n`,
      );
      await page.getByRole("button", { name: "Save index.html" }).click();
      await page.locator(".editor [data-status]", { hasText: "Saved." }).waitFor({ timeout: 20_000 });
      await expect.poll(() => served(j, pod), { timeout: 15_000 }).toContain(marker);
    }, 120_000);

    it("uploads a file with a progress bar reaching 100 %, then lists it", async () => {
      const { page } = j;
      const pod = staticPod(j);
      await page.goto(app(j, `/pods/${pod}/files`));
      // every value the progress bar takes, recorded in the page as it changes
      await watchAttribute(page, "[data-upload-bar]", "value");
      const size = 3 * 1024 * 1024;
      await page.locator("[data-upload-input]").setInputFiles({
        name: "big-upload.bin",
        mimeType: "application/octet-stream",
        buffer: Buffer.alloc(size, 7),
      });
      await page
        .locator("[data-upload-status]", { hasText: "big-upload.bin: 100 %, uploaded" })
        .waitFor({ timeout: 60_000 });
      const seen = (await page.evaluate("window.seen")) as string[];
      expect(seen.length).toBeGreaterThan(1);
      expect(seen.at(-1)).toBe("100");
      // the page reloads and lists it; the API has every byte
      await page.getByRole("link", { name: "big-upload.bin", exact: true }).waitFor({ timeout: 15_000 });
      const listed = await j.owner.api.get(`/api/pods/${pod}/files?path=/home/pod_user/app`);
      const entry = listed.body.files.find((f: { name: string }) => f.name === "big-upload.bin");
      expect(entry?.size).toBe(String(size));
    }, 120_000);

    it("makes a folder and a file, renames, copies and deletes (after confirming) through the page's forms", async () => {
      const { page } = j;
      const pod = staticPod(j);
      await page.goto(app(j, `/pods/${pod}/files`));
      await page.getByLabel("New folder (full path)").fill("/home/pod_user/app/made-here");
      await page.getByRole("button", { name: "Create folder" }).click();
      await page.getByRole("link", { name: "made-here/" }).waitFor({ timeout: 20_000 });

      await page.getByLabel("New empty file (full path)").fill("/home/pod_user/app/notes.txt");
      await page.getByRole("button", { name: "Create file" }).click();
      await page.getByRole("link", { name: "notes.txt", exact: true }).click({ timeout: 20_000 });
      await page.locator("textarea[name=content]").waitFor({ timeout: 20_000 });
      await page.getByLabel("Rename or move to (full path)").fill("/home/pod_user/app/made-here/moved.txt");
      await page.getByRole("button", { name: "Rename file" }).click();
      await page.waitForURL(/files\?path=%2Fhome%2Fpod_user%2Fapp$/, { timeout: 20_000 });

      await page.getByRole("link", { name: "made-here/" }).click();
      await page.getByRole("link", { name: "moved.txt", exact: true }).click();
      await page.getByLabel("Copy to (full path)").fill("/home/pod_user/app/made-here/copied.txt");
      await page.getByRole("button", { name: "Copy file" }).click();
      await page.getByRole("link", { name: "copied.txt", exact: true }).waitFor({ timeout: 20_000 });

      await page.getByRole("link", { name: "copied.txt", exact: true }).click();
      const asked = j.dialogs.length;
      await page.getByRole("button", { name: "Delete file" }).click();
      await page.waitForURL(/files\?path=%2Fhome%2Fpod_user%2Fapp%2Fmade-here$/, { timeout: 20_000 });
      expect(j.dialogs.slice(asked)).toEqual([
        "Delete /home/pod_user/app/made-here/copied.txt? This cannot be undone.",
      ]);
      const left = await j.owner.api.get(`/api/pods/${pod}/files?path=/home/pod_user/app/made-here`);
      expect(left.body.files.map((f: { name: string }) => f.name)).toEqual(["moved.txt"]);
    }, 120_000);
  });
}

/** The static pod's Environment tab: a variable set in the table, reviewed, saved and restarted. */
export function envSteps(j: Journey) {
  describe("environment", () => {
    it("sets an env var in the table, reviews the diff, saves and restarts; values stay out of the page until revealed", async () => {
      const { page } = j;
      const pod = staticPod(j);
      await page.goto(app(j, `/pods/${pod}/env`));
      await page.getByRole("button", { name: "Add variable" }).click();
      const row = page.locator("[data-env-rows] tr").last();
      await row.locator("[data-env-key]").fill("GREETING");
      const value = `hello from the table ${Date.now()}`;
      await row.locator("[data-env-value]").fill(value);
      await page.getByRole("button", { name: "Review changes" }).click();
      await expect(page.locator("[data-env-diff]").textContent()).resolves.toBe("+ GREETING (new)");
      await page.getByRole("button", { name: "Save and restart the pod" }).click();
      await page
        .locator("[data-env-status]", { hasText: "Saved and restarted." })
        .waitFor({ timeout: 60_000 });

      const env = await j.owner.api.get(`/api/pods/${pod}/env`);
      expect(env.status).toBe(200);
      expect(env.body.vars.GREETING).toBe(value);
      await waitForPodStatus(j.owner.api, pod, "running");

      // after the reload: the name is there, its value is not, until Reveal fetches it from the API
      await page.locator('[data-env-row][data-original="GREETING"]').waitFor({ timeout: 15_000 });
      expect(await page.content()).not.toContain(value);
      await page.getByRole("button", { name: "Reveal values" }).click();
      await expect
        .poll(() => page.locator('[data-original="GREETING"] [data-env-value]').inputValue())
        .toBe(value);
    }, 180_000);

    it("axe-core finds nothing serious on the Overview, Files (a file open) and Environment tabs, and 390 px needs no sideways scrolling", async () => {
      const pod = staticPod(j);
      const tabs = [`/pods/${pod}`, `/pods/${pod}/files?entry=index.html`, `/pods/${pod}/env`];
      expect(
        await auditPages(
          j.browser,
          j.stack.api,
          j.owner.token,
          tabs.map((t) => `/app${t}`),
        ),
      ).toEqual([]);
    }, 180_000);
  });
}

/** The journey's end for the static pod: deleted once its name is typed. */
export function deleteSteps(j: Journey) {
  describe("delete", () => {
    it("deletes the pod once its name is typed", async () => {
      const { page } = j;
      const pod = staticPod(j);
      await page.goto(app(j, `/pods/${pod}`));
      const confirm = page.getByLabel(`Type ${pod} to confirm`);
      const button = page.getByRole("button", { name: `Delete ${pod}` });
      await confirm.fill(`${pod}-nope`);
      expect(await button.isDisabled()).toBe(true);
      await confirm.fill(pod);
      expect(await button.isDisabled()).toBe(false);
      await button.click();
      await page.waitForURL(app(j, ""), { timeout: 60_000 });
      const gone = await j.owner.api.get(`/api/pods/${pod}`);
      expect(gone.status).toBe(404);
    }, 120_000);
  });
}
