import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { MAX_TERMINALS_PER_POD } from "../../../shared/protocol/terminal";
import { signUp } from "../support/api";
import { auditPages } from "../support/dashboard";
import { app, type Journey, staticPod } from "./journey";

/**
 * The static pod's Terminal tab: a real pty as pod_user that follows the window's size, the
 * WebSocket's refusals played by an attacker's client (another team: Eve), the per-pod session cap,
 * and whether a flooding terminal delays the host's other commands (the no-op `/agent/ping` round
 * trip, quiet and under a `yes` flood).
 */
export function terminalSteps(j: Journey) {
  describe("terminal", () => {
    // the terminal's tests size the window themselves (the pty follows it)
    beforeAll(() => j.page.setViewportSize({ width: 1440, height: 900 }));
    afterAll(() => j.page.setViewportSize({ width: 1280, height: 720 }));
    const wsUrl = (pod: string) => `${j.stack.api.replace(/^http/, "ws")}/api/pods/${pod}/terminal`;

    /** The terminal's visible text, one line per row (xterm's DOM renderer draws rows as elements). */
    const screenText = () => j.page.locator("#terminal .xterm-rows").innerText();

    /** Types `command` and Enter into the terminal, then waits for `expected` on the screen. */
    async function run(command: string, expected: RegExp, timeout = 15_000) {
      await j.page.locator("#terminal").click();
      await j.page.keyboard.type(command);
      await j.page.keyboard.press("Enter");
      await expect.poll(screenText, { timeout }).toMatch(expected);
    }

    async function openTab() {
      await j.page.goto(app(j, `/pods/${staticPod(j)}/terminal`));
      await j.page.locator("#terminal-status", { hasText: "Connected." }).waitFor({ timeout: 20_000 });
      // the shell's prompt
      await expect.poll(screenText, { timeout: 15_000 }).toMatch(/\$\s*$/m);
    }

    /** each socket's close with the JSON messages it received, recorded from its creation (nothing missed) */
    const endings = new WeakMap<WebSocket, Promise<{ code: number; reason: string; messages: unknown[] }>>();

    /** What the server says to a WebSocket upgrade: the HTTP status of a refusal, or the socket. */
    function dial(pod: string, headers: Record<string, string>): Promise<{ status: number; ws?: WebSocket }> {
      return new Promise((resolve, reject) => {
        const ws = new WebSocket(wsUrl(pod), { headers, perMessageDeflate: false });
        const messages: unknown[] = [];
        ws.on("message", (data, binary) => {
          if (!binary) messages.push(JSON.parse(data.toString()));
        });
        endings.set(
          ws,
          new Promise((done) =>
            ws.once("close", (code, reason) => done({ code, reason: reason.toString(), messages })),
          ),
        );
        ws.once("unexpected-response", (req, res) => {
          req.destroy(); // ws leaves the request open when this event is listened for
          resolve({ status: res.statusCode ?? 0 });
        });
        ws.once("open", () => resolve({ status: 101, ws }));
        ws.once("error", reject);
      });
    }

    /** A socket's close, with the JSON messages it received. */
    const ending = (ws: WebSocket) => endings.get(ws) ?? Promise.reject(new Error("not a dialed socket"));

    it("runs a shell as pod_user: `echo hello` prints hello, `id -un` is pod_user", async () => {
      await openTab();
      await run("echo hello", /^hello\s*$/m);
      await run("id -un", /^pod_user\s*$/m);
    }, 90_000);

    it("the pty follows the window: `stty size` is the terminal's size, before and after a resize", async () => {
      await openTab();
      const wide = await j.page.locator("#terminal").getAttribute("data-size");
      expect(wide).toMatch(/^\d+ \d+$/);
      await run("clear; stty size", new RegExp(`^${wide}\\s*$`, "m"));
      await j.page.setViewportSize({ width: 390, height: 700 });
      await expect.poll(() => j.page.locator("#terminal").getAttribute("data-size")).not.toBe(wide);
      const narrow = await j.page.locator("#terminal").getAttribute("data-size");
      const [rows, cols] = (narrow ?? "").split(" ").map(Number);
      expect(cols).toBeLessThan(Number(wide?.split(" ")[1]));
      await run("clear; stty size", new RegExp(`^${rows} ${cols}\\s*$`, "m"));
      await j.page.setViewportSize({ width: 1440, height: 900 });
    }, 90_000);

    it("says so when the shell ends, and Reconnect opens a new session", async () => {
      await openTab();
      await j.page.locator("#terminal").click();
      await j.page.keyboard.type("exit 3");
      await j.page.keyboard.press("Enter");
      await j.page.locator("#terminal-status", { hasText: "The shell exited (status 3)." }).waitFor();
      await j.page.getByRole("button", { name: "Reconnect" }).click();
      await j.page.locator("#terminal-status", { hasText: "Connected." }).waitFor({ timeout: 20_000 });
      await run("echo again", /^again\s*$/m);
    }, 90_000);

    it("at 390 and 1440 px: the CSP refuses nothing xterm does, axe-core finds nothing serious, nothing scrolls sideways", async () => {
      const refused: string[] = [];
      const onConsole = (m: { type(): string; text(): string }) => {
        if (m.type() === "error" && m.text().includes("Content Security Policy")) refused.push(m.text());
      };
      j.page.on("console", onConsole);
      await openTab();
      // xterm's own <style> elements apply: a row has its measured height
      const rowHeight = Number(
        await j.page.evaluate('document.querySelector("#terminal .xterm-rows > div")?.offsetHeight ?? 0'),
      );
      expect(rowHeight).toBeGreaterThan(5);
      j.page.off("console", onConsole);
      expect(refused).toEqual([]);

      const findings = await auditPages(
        j.browser,
        j.stack.api,
        j.owner.token,
        [`/app/pods/${staticPod(j)}/terminal`],
        {
          ready: (tab) =>
            tab.locator("#terminal-status", { hasText: "Connected." }).waitFor({ timeout: 20_000 }),
        },
      );
      expect(findings).toEqual([]);
    }, 120_000);

    it("attacker: a foreign Origin is 403 even with the cookie, no credential 401, another team's pod 404", async () => {
      const pod = staticPod(j);
      const cookie = `pod_session=${j.owner.token}`;
      expect((await dial(pod, { cookie, origin: "http://evil.pods.localhost" })).status).toBe(403);
      expect((await dial(pod, { cookie, origin: "https://attacker.example" })).status).toBe(403);
      expect((await dial(pod, {})).status).toBe(401);
      expect((await dial(pod, { origin: new URL(j.stack.api).origin })).status).toBe(401);
      const eve = await signUp(j.stack.api, "Eve");
      expect((await dial(pod, { authorization: `Bearer ${eve.token}` })).status).toBe(404);
      // the owner's own page origin with the cookie gets a terminal
      const own = await dial(pod, { cookie, origin: new URL(j.stack.api).origin });
      expect(own.status).toBe(101);
      own.ws?.close();
    }, 60_000);

    it(`refuses a session past ${MAX_TERMINALS_PER_POD} open on one pod, and takes one again after a close`, async () => {
      const pod = staticPod(j);
      await j.page.goto(app(j, "/")); // the browser's own session is closed
      const auth = { authorization: `Bearer ${j.owner.token}` };
      const open: WebSocket[] = [];
      try {
        for (let i = 0; i < MAX_TERMINALS_PER_POD; i++) {
          const s = await dial(pod, auth);
          expect(s.status).toBe(101);
          if (s.ws) open.push(s.ws);
        }
        const over = await dial(pod, auth);
        expect(over.status).toBe(101);
        const refused = await ending(over.ws as WebSocket);
        expect(refused.code).toBe(4429);
        expect(refused.messages[0]).toMatchObject({ type: "error", status: 429 });
        expect(JSON.stringify(refused.messages[0])).toContain(`${MAX_TERMINALS_PER_POD} terminal sessions`);

        const first = open.shift() as WebSocket;
        const closed = ending(first);
        first.close(1000, "done");
        await closed;
        await expect
          .poll(
            async () => {
              const again = await dial(pod, auth);
              if (again.ws) {
                const end = ending(again.ws);
                await new Promise((r) => setTimeout(r, 300));
                const alive = again.ws.readyState === WebSocket.OPEN;
                again.ws.close();
                await end;
                return alive;
              }
              return false;
            },
            { timeout: 10_000 },
          )
          .toBe(true);
      } finally {
        for (const ws of open) ws.close();
      }
    }, 90_000);

    it("a `yes` flooding the terminal does not delay the host's other commands (/agent/ping)", async () => {
      const agentToken = j.stack.agentEnv.PODHOST_AGENT_TOKEN;
      const ping = async () => {
        const started = performance.now();
        const res = await fetch(`${j.stack.api}/agent/ping`, {
          headers: { authorization: `Bearer ${agentToken}` },
        });
        await res.text();
        expect(res.status).toBe(200);
        return performance.now() - started;
      };
      const sample = async (n: number) => {
        const times: number[] = [];
        for (let i = 0; i < n; i++) times.push(await ping());
        times.sort((a, b) => a - b);
        const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0;
        return { p50: at(0.5), p90: at(0.9), max: at(1) };
      };

      await openTab();
      await sample(10); // warm up
      const quiet = await sample(60);

      await j.page.locator("#terminal").click();
      await j.page.keyboard.type("yes");
      await j.page.keyboard.press("Enter");
      await expect.poll(screenText, { timeout: 10_000 }).toMatch(/^y\s*\n\s*y\s*$/m);
      // the flood reaches the page: count what it drew while the pings run
      const drawnBefore = await j.page.evaluate(() => performance.now());
      const flood = await sample(60);
      const floodMs = (await j.page.evaluate(() => performance.now())) - drawnBefore;
      await j.page.keyboard.press("Control+C");
      await run("echo flood-over", /^flood-over\s*$/m, 30_000);

      const fmt = (s: { p50: number; p90: number; max: number }) =>
        `p50 ${s.p50.toFixed(1)} ms, p90 ${s.p90.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
      // printed whether the test passes or not (the run is silent for passing tests' console.log)
      process.stdout.write(
        [
          `/agent/ping quiet: ${fmt(quiet)}`,
          `/agent/ping during a yes flood (${(floodMs / 1000).toFixed(1)} s): ${fmt(flood)}`,
          `difference of medians: ${(flood.p50 - quiet.p50).toFixed(1)} ms (goal: within +5 ms)\n`,
        ].join("\n"),
      );
      // The goal is +5 ms on the median. This machine's 2 cores are shared by the Worker, the agent,
      // Chromium drawing the flood, dockerd and other test runs (load average 15-18 when it was
      // written): the flood's CPU shows in every round trip. So the assertion is looser, +50 ms or 3x
      // the quiet median, which a control socket queued behind terminal bytes would still break
      // (docs/dashboard.md "Terminal").
      expect(flood.p50).toBeLessThan(Math.max(quiet.p50 + 50, quiet.p50 * 3));
    }, 120_000);
  });
}
