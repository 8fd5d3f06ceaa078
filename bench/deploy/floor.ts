/**
 * bench/deploy's floor, by hand on the host: `git clone --depth 1` + `npm ci` + `node server.js` until it
 * answers; then `git fetch` + `checkout` + the app restarted until it answers.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { rm } from "node:fs/promises";
import { freePort } from "../../test/agent/helpers";
import { git } from "../../test/support/git-server";
import { untilServes } from "./probe";
import { npmEnv, run } from "./settings";

export class Floor {
  private app: ChildProcess | null = null;
  private port = 0;
  constructor(
    private readonly dir: string,
    private readonly cache: string,
    private readonly url: string,
  ) {}

  private async start(want: string): Promise<void> {
    this.port = await freePort();
    this.app = spawn(process.execPath, ["server.js"], {
      cwd: this.dir,
      env: { ...process.env, PORT: String(this.port) },
      stdio: "ignore",
    });
    await untilServes(this.port, want);
  }

  async stopApp(): Promise<void> {
    const app = this.app;
    this.app = null;
    if (!app || app.exitCode !== null || app.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      app.once("exit", () => resolve());
      app.kill("SIGTERM");
    });
  }

  /** git clone --depth 1, npm ci, node server.js, until it answers. */
  async first(want: string): Promise<void> {
    await this.stopApp();
    await rm(this.dir, { recursive: true, force: true });
    await git(["clone", "-q", "--depth", "1", "--branch", "main", this.url, this.dir]);
    await run("npm", ["ci", "--silent"], { cwd: this.dir, env: npmEnv(this.cache) });
    await this.start(want);
  }

  /** git fetch --depth 1 + checkout, the app restarted, until it answers. */
  async codeOnly(want: string): Promise<void> {
    await git(["fetch", "-q", "--depth", "1", "origin", "main"], this.dir);
    await git(["checkout", "-q", "--detach", "FETCH_HEAD"], this.dir);
    await this.stopApp();
    await this.start(want);
  }
}
