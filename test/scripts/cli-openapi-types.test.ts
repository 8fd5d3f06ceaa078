import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { generateTypes, TYPES_FILE } from "../../cli/scripts/openapi-types";

/**
 * The CLI's API types (cli/src/api/openapi.d.ts) are generated from the Worker's /openapi.json: a
 * route whose schema changed without regenerating them fails here, so the CLI never describes the
 * API differently from the API itself.
 */
describe("the CLI's generated API types", () => {
  it("match the OpenAPI document the Worker serves (else: npx tsx cli/scripts/openapi-types.ts)", {
    timeout: 120_000,
  }, async () => {
    const current = await readFile(TYPES_FILE, "utf8");
    expect(current === (await generateTypes()), "run npx tsx cli/scripts/openapi-types.ts").toBe(true);
  });
});
