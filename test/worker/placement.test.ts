import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { PLANS } from "../../shared/catalog";
import { createDb } from "../../worker/db/client";
import { reserveHost } from "../../worker/services/pods/placement";

/** What a create is told when no host has room (worker/services/pods/placement.ts). */
describe("placement without room", () => {
  const plan = PLANS[0];
  if (!plan) throw new Error("no plan in the catalog");

  it("names the one region the client chose", async () => {
    const placed = await reserveHost(createDb(env.DB), { region: "zz-named" }, plan);
    expect(placed).toMatchObject({
      ok: false,
      code: "unavailable",
      message: `no capacity in region zz-named for a ${plan.slug} pod; try another region or plan`,
    });
  });

  it("names every region tried when the client chose none, not only the preferred one", async () => {
    const placed = await reserveHost(
      createDb(env.DB),
      { region: "zz-near", fallbackRegions: ["zz-far", "zz-farther"] },
      plan,
    );
    expect(placed).toMatchObject({
      ok: false,
      code: "unavailable",
      message: `no capacity in any region (zz-near, zz-far, zz-farther) for a ${plan.slug} pod; try another plan or try again in a few minutes`,
    });
  });
});
