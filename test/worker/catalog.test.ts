import { beforeAll, describe, expect, it } from "vitest";
import { call, registerUser, type TestUser } from "./support/client";

let user: TestUser;
beforeAll(async () => {
  user = await registerUser();
});

const get = (path: string) => call("GET", path, undefined, { token: user.token });

describe("GET /api/plans", () => {
  it("lists launch, build, grow, scale, turbo in order of size with their fields", async () => {
    const res = await get("/api/plans");
    expect(res.status).toBe(200);
    const plans = res.body.plans as Record<string, unknown>[];
    expect(plans.map((p) => p.slug)).toEqual(["launch", "build", "grow", "scale", "turbo"]);
    for (const plan of plans) {
      expect(Object.keys(plan).sort()).toEqual(
        [
          "backups_kept",
          "cpu",
          "daily_price",
          "database_services",
          "disk",
          "memory",
          "monthly_price",
          "name",
          "slug",
        ].sort(),
      );
      expect(plan).toMatchObject({
        name: expect.any(String),
        cpu: expect.any(Number),
        memory: expect.any(String),
        disk: expect.any(String),
      });
      expect(Number.isInteger(plan.monthly_price)).toBe(true);
      expect(Number.isInteger(plan.daily_price)).toBe(true);
      expect(plan.daily_price as number).toBeGreaterThan(0);
      expect(plan.daily_price as number).toBeLessThan(plan.monthly_price as number);
    }
    expect(plans.map((p) => p.backups_kept)).toEqual([1, 5, 10, 15, 30]);
    expect(plans.map((p) => p.database_services)).toEqual([false, true, true, true, true]);
    const prices = plans.map((p) => p.monthly_price as number);
    expect([...prices].sort((a, b) => a - b)).toEqual(prices);
  });
});

describe("GET /api/presets", () => {
  it("lists the four presets with slug, name, port, app_root, public_root", async () => {
    const res = await get("/api/presets");
    expect(res.status).toBe(200);
    expect(res.body.presets.map((p: { slug: string }) => p.slug).sort()).toEqual(
      ["nodejs", "php", "python", "static"].sort(),
    );
    for (const preset of res.body.presets) {
      expect(preset).toEqual({
        slug: expect.any(String),
        name: expect.any(String),
        port: expect.any(Number),
        app_root: expect.any(String),
        public_root: expect.any(String),
      });
    }
  });
});

describe("GET /api/regions", () => {
  it("lists regions with slug, name, available", async () => {
    const res = await get("/api/regions");
    expect(res.status).toBe(200);
    expect(res.body.regions.length).toBeGreaterThan(0);
    for (const region of res.body.regions) {
      expect(region).toEqual({
        slug: expect.any(String),
        name: expect.any(String),
        available: expect.any(Boolean),
      });
    }
  });
});

describe("GET /api/runtimes", () => {
  it("lists a runtime per preset with versions and a default among them", async () => {
    const res = await get("/api/runtimes");
    expect(res.status).toBe(200);
    expect(res.body.runtimes.map((r: { preset: string }) => r.preset).sort()).toEqual(
      ["nodejs", "php", "python", "static"].sort(),
    );
    for (const runtime of res.body.runtimes) {
      expect(runtime).toEqual({
        preset: expect.any(String),
        name: expect.any(String),
        versions: expect.any(Array),
        default: expect.any(String),
      });
      expect(runtime.versions).toContain(runtime.default);
    }
    const node = res.body.runtimes.find((r: { preset: string }) => r.preset === "nodejs");
    expect(node.versions).toEqual(["18", "20", "22", "24"]);
  });
});

describe("the catalog", () => {
  it.each(["/api/plans", "/api/presets", "/api/regions", "/api/runtimes"])(
    "%s needs authentication like every endpoint the spec does not list as public",
    async (path) => {
      expect((await call("GET", path)).status).toBe(401);
    },
  );
});
