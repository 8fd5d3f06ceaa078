import { describe, expect, it } from "vitest";
import { detectCommands, guessPreset, procfileWeb, type RepoFiles } from "../../agent/git/detect";

/** Detection is pure: root file names and a few files' text in, commands out. */

const repo = (files: Record<string, string>): RepoFiles => ({
  names: new Set(Object.keys(files)),
  text: files,
});
const pkg = (o: object) => JSON.stringify(o);

describe("detection", () => {
  it("nodejs with a lockfile: npm ci, the build script, npm start, port 3000", () => {
    const d = detectCommands(
      repo({
        "package.json": pkg({ scripts: { build: "tsc", start: "node dist/server.js" } }),
        "package-lock.json": "{}",
      }),
    );
    expect(d).toEqual({
      preset: "nodejs",
      install_command: "npm ci",
      build_command: "npm run build",
      start_command: "npm start",
      port: 3000,
    });
  });

  it("nodejs without a lockfile: npm install; no build script: no build; server.js starts", () => {
    const d = detectCommands(repo({ "package.json": pkg({ dependencies: { a: "1" } }), "server.js": "" }));
    expect(d).toMatchObject({
      install_command: "npm install",
      build_command: null,
      start_command: "node server.js",
    });
  });

  it("yarn and pnpm lockfiles fall back to npm install when the image has neither tool", () => {
    expect(detectCommands(repo({ "package.json": "{}", "yarn.lock": "" })).install_command).toBe(
      "npm install",
    );
    expect(
      detectCommands(repo({ "package.json": "{}", "yarn.lock": "" }), { tools: { yarn: true, pnpm: false } })
        .install_command,
    ).toBe("yarn install --frozen-lockfile");
    expect(
      detectCommands(repo({ "package.json": "{}", "pnpm-lock.yaml": "" }), {
        tools: { yarn: false, pnpm: true },
      }).install_command,
    ).toBe("pnpm install --frozen-lockfile");
  });

  it("a Procfile web: line wins over package.json's start; next without start gets next start", () => {
    const files = {
      "package.json": pkg({ scripts: { start: "node a.js" } }),
      Procfile: "worker: x\nweb: node web.js\n",
    };
    expect(detectCommands(repo(files)).start_command).toBe("node web.js");
    expect(
      detectCommands(
        repo({ "package.json": pkg({ dependencies: { next: "15" }, scripts: { build: "next build" } }) }),
      ).start_command,
    ).toBe("npx next start");
  });

  it("python: a venv and pip from requirements.txt or pyproject.toml; app.py; port 8000", () => {
    const d = detectCommands(repo({ "requirements.txt": "flask\n", "app.py": "" }));
    expect(d.preset).toBe("python");
    expect(d.install_command).toContain(
      ".venv/bin/pip install --disable-pip-version-check -r requirements.txt",
    );
    expect(d.start_command).toBe("python app.py");
    expect(d.port).toBe(8000);
    expect(detectCommands(repo({ "pyproject.toml": "", "main.py": "" })).install_command).toContain(
      "pip install",
    );
  });

  it("php: composer install when composer.json exists; index.php alone needs nothing", () => {
    expect(detectCommands(repo({ "composer.json": "{}", "index.php": "" }))).toMatchObject({
      preset: "php",
      install_command: expect.stringContaining("composer install"),
      start_command: null,
      port: 8080,
    });
    expect(detectCommands(repo({ "index.php": "" })).install_command).toBeNull();
  });

  it("static: nothing to run; a static pod with a build script builds with npm", () => {
    expect(detectCommands(repo({ "index.html": "" }))).toEqual({
      preset: "static",
      install_command: null,
      build_command: null,
      start_command: null,
      port: 8080,
    });
    const vite = detectCommands(repo({ "package.json": pkg({ scripts: { build: "vite build" } }) }), {
      preset: "static",
    });
    expect(vite).toMatchObject({ install_command: "npm install", build_command: "npm run build" });
  });

  it("the pod's preset wins, and the user's build command overrides the detected one", () => {
    const files = repo({ "package.json": pkg({ scripts: { build: "x" } }), "index.php": "" });
    expect(guessPreset(files)).toBe("nodejs");
    expect(detectCommands(files, { preset: "php" }).preset).toBe("php");
    expect(detectCommands(files, { buildCommand: "  make all " }).build_command).toBe("make all");
    expect(detectCommands(files, { buildCommand: "" }).build_command).toBe("npm run build");
  });

  it("guesses: requirements → python, composer → php, index.html → static, nothing → static", () => {
    expect(guessPreset(repo({ "requirements.txt": "" }))).toBe("python");
    expect(guessPreset(repo({ "composer.json": "{}" }))).toBe("php");
    expect(guessPreset(repo({ "index.html": "" }))).toBe("static");
    expect(guessPreset(repo({ "README.md": "" }))).toBe("static");
  });

  it("survives hostile files: broken JSON, non-string scripts, a huge Procfile line", () => {
    expect(detectCommands(repo({ "package.json": "{not json", "index.js": "" })).start_command).toBe(
      "node index.js",
    );
    expect(detectCommands(repo({ "package.json": pkg({ scripts: { start: 1, build: [] } }) }))).toMatchObject(
      {
        build_command: null,
        start_command: null,
      },
    );
    expect(procfileWeb(`web: ${"x".repeat(100_000)}`)?.length).toBe(2000);
    expect(procfileWeb("web:   \n")).toBeNull();
  });
});
