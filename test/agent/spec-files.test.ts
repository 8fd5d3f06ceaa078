import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { containerCreateOptions } from "../../agent/docker/container-spec";
import { POD_SECURITY_OPT } from "../../agent/docker/seccomp";
import { dotenvLine, renderCrontab, specFileEntries } from "../../agent/docker/spec-files";
import { buildTar } from "../../agent/docker/tar";
import { AgentError } from "../../agent/errors";
import { podSpec } from "./helpers";

/** Pure builders: what the pod's files and container options look like, without an engine. */

describe("dotenvLine", () => {
  it("double-quotes and escapes backslash, quote, newline, CR and tab; leaves # = $ alone", () => {
    expect(dotenvLine("A", 'x\\y"z\nw\r\t# = $HOME')).toBe('A="x\\\\y\\"z\\nw\\r\\t# = $HOME"');
    expect(dotenvLine("EMPTY", "")).toBe('EMPTY=""');
  });

  it("rejects names the loader would skip", () => {
    for (const bad of ["", "1A", "A B", "A=B", "A\nB", "ä"]) {
      expect(() => dotenvLine(bad, "x")).toThrow(AgentError);
    }
  });
});

describe("specFileEntries", () => {
  it("writes every part for create, only the given parts for clone", () => {
    const spec = podSpec("files", { env: { A: "1" } });
    expect(specFileEntries(spec).map((e) => e.path)).toEqual([
      "app",
      "app/.env",
      ".pod",
      ".pod/crontab",
      ".ssh",
      ".ssh/authorized_keys",
    ]);
    expect(specFileEntries(spec, { onlyNonEmpty: true }).map((e) => e.path)).toEqual(["app", "app/.env"]);
  });

  it("writes no .env when the spec has no env vars (a fresh pod has no env file), one with them", () => {
    const bare = specFileEntries(podSpec("bare")).map((e) => e.path);
    expect(bare).toContain("app");
    expect(bare).not.toContain("app/.env");
    expect(specFileEntries(podSpec("bare"), { onlyNonEmpty: true })).toEqual([]);
    const env = specFileEntries(podSpec("vars", { env: { A: "1", B: "two words" } })).find(
      (e) => e.path === "app/.env",
    );
    expect(env).toMatchObject({ type: "file", mode: 0o600, content: 'A="1"\nB="two words"\n' });
  });

  it("refuses worker names that escape the workers dir, and duplicates", () => {
    for (const name of ["..", ".", "a/b", "", "x y"]) {
      expect(() => specFileEntries(podSpec("wrk", { workers: [{ name, command: "x" }] }))).toThrow(
        AgentError,
      );
    }
    const twice = [
      { name: "a", command: "x" },
      { name: "a", command: "y" },
    ];
    expect(() => specFileEntries(podSpec("wrk", { workers: twice }))).toThrow(/twice/);
  });

  it("keeps each cron job on its own line", () => {
    expect(renderCrontab([{ schedule: "@daily", command: "php artisan x" }])).toMatch(
      /\n@daily php artisan x\n$/,
    );
    expect(() => renderCrontab([{ schedule: "* * * * *", command: "a\nb" }])).toThrow(AgentError);
  });
});

describe("buildTar", () => {
  it("is a tar that GNU tar lists with pod_user's ids and the given modes", () => {
    const long = `${"d".repeat(80)}/${"f".repeat(60)}`;
    const tar = buildTar([
      { path: "dir", type: "dir", mode: 0o700, uid: 1000, gid: 1000 },
      { path: "dir/file", type: "file", mode: 0o600, content: "héllo\n", uid: 1000, gid: 1000 },
      { path: long, type: "file", mode: 0o644, content: "x".repeat(1000), uid: 1000, gid: 1000 },
    ]);
    const listing = execFileSync("tar", ["-tv", "--numeric-owner", "-f", "-"], { input: tar }).toString();
    expect(listing).toMatch(/^drwx------ 1000\/1000 +0 .* dir\/$/m);
    expect(listing).toMatch(/^-rw------- 1000\/1000 +7 .* dir\/file$/m);
    expect(listing).toContain(long);
    expect(execFileSync("tar", ["-xOf", "-", "dir/file"], { input: tar }).toString()).toBe("héllo\n");
  });

  it("refuses absolute and parent paths", () => {
    for (const path of ["/etc/x", "../x", "a/../../x"]) {
      expect(() => buildTar([{ path, type: "file", mode: 0o644, uid: 0, gid: 0 }])).toThrow();
    }
  });
});

describe("containerCreateOptions", () => {
  it("never asks for privileges, host paths, published ports or the docker socket", () => {
    const o = containerCreateOptions("px", podSpec("iso", { preset: "php" }), "podhost/php:latest");
    expect(o.HostConfig).toMatchObject({
      Privileged: false,
      CapDrop: ["ALL"],
      CapAdd: [],
      SecurityOpt: POD_SECURITY_OPT,
      Init: true,
      ReadonlyRootfs: true,
      NetworkMode: "px-iso",
      PortBindings: {},
    });
    expect(o.User).toBe("1000:1000");
    expect(o.HostConfig?.Binds).toBeUndefined();
    expect(o.HostConfig?.Mounts).toEqual([
      { Type: "volume", Source: "px-iso-home", Target: "/home/pod_user", ReadOnly: false },
    ]);
    expect(Object.keys(o.HostConfig?.Tmpfs ?? {})).toContain("/var/lib/php/sessions");
  });
});

describe("the pods' seccomp profile", () => {
  const profile = JSON.parse(POD_SECURITY_OPT[1]?.replace(/^seccomp=/, "") ?? "{}") as {
    defaultAction: string;
    syscalls: {
      names: string[];
      action: string;
      args?: { value: number; valueTwo?: number; op: string }[];
    }[];
  };
  const ioctl = profile.syscalls.filter((r) => r.names.includes("ioctl"));

  it("is the engine's default with ioctl allowed by type only, never type 0x94 (btrfs) but for the clone requests", () => {
    expect(POD_SECURITY_OPT[0]).toBe("no-new-privileges");
    expect(profile.defaultAction).toBe("SCMP_ACT_ERRNO");
    expect(ioctl.every((r) => r.action === "SCMP_ACT_ALLOW" && r.args?.length === 1)).toBe(true);
    // every type but 0x94 matches one of the single-bit rules; 0x94 matches none
    const bitRules = ioctl.filter((r) => r.args?.[0]?.op === "SCMP_CMP_MASKED_EQ").map((r) => r.args?.[0]);
    const allowedType = (type: number) =>
      bitRules.some((a) => ((type << 8) & (a?.value ?? 0)) === a?.valueTwo);
    for (let type = 0; type < 256; type++) expect(allowedType(type), `type ${type}`).toBe(type !== 0x94);
    const exact = ioctl.filter((r) => r.args?.[0]?.op === "SCMP_CMP_EQ").map((r) => r.args?.[0]?.value);
    expect(exact).toEqual([0x40049409, 0x4020940d, 0xc0189436]);
    // the rest of the default is untouched: a few of its allowed calls
    const allowed = profile.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW").flatMap((r) => r.names);
    expect(allowed).toEqual(expect.arrayContaining(["read", "write", "openat", "clone", "execve"]));
  });
});

describe("every container the agent makes from a pod's image", () => {
  it("carries the pods' security options (no hand-written SecurityOpt anywhere in agent/)", () => {
    const root = join(import.meta.dirname, "../../agent");
    const files = readdirSync(root, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(20);
    const handWritten = files.filter((f) => /SecurityOpt:\s*\[/.test(readFileSync(join(root, f), "utf8")));
    expect(handWritten).toEqual([]);
    const uses = (text: string) => files.filter((f) => readFileSync(join(root, f), "utf8").includes(text));
    // the whole isolation (agent/docker/isolation.ts) for containers that live a while …
    expect(uses("...POD_ISOLATION").sort()).toEqual(
      [
        "backups/box.ts",
        "backups/stopped-pod.ts",
        "docker/container-spec.ts",
        "git/build.ts",
        "git/switch.ts",
        "services/spec.ts",
      ].sort(),
    );
    // … the profile alone for the two that hold a volume for one copy and never run a user's code
    expect(uses("SecurityOpt: POD_SECURITY_OPT").sort()).toEqual(
      ["docker/container-spec.ts", "docker/isolation.ts", "docker/pod-user.ts"].sort(),
    );
  });
});
