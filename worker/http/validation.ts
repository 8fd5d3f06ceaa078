import type { Hook } from "@hono/zod-openapi";
import type { z } from "zod";
import type { AppEnv } from "./app-env";

/** "email: is required", "name: must be at most 100 characters": one line naming the field. */
export function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join(".") : "body";
      return `${field}: ${describeIssue(issue)}`;
    })
    .join("; ");
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return issue.input === undefined ? "is required" : `must be ${article(issue.expected)}`;
    case "too_small":
      if (issue.origin === "string") return `must be at least ${issue.minimum} characters`;
      if (issue.origin === "array") return `must have at least ${issue.minimum} item(s)`;
      return `must be at least ${issue.minimum}`;
    case "too_big":
      if (issue.origin === "string") return `must be at most ${issue.maximum} characters`;
      if (issue.origin === "array") return `must have at most ${issue.maximum} item(s)`;
      return `must be at most ${issue.maximum}`;
    case "invalid_value":
      return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_format":
      if (issue.format === "email") return "must be a valid email address";
      // A pattern's own message says what it wants ("must match …"); zod's default only says "Invalid".
      if (issue.format === "regex")
        return issue.message.startsWith("Invalid") ? `must match ${issue.pattern}` : issue.message;
      return `must be a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** zod-openapi's hook: every failed validation becomes a 400 `{error}` naming the field. */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (result, c) => {
  if (!result.success) {
    return c.json({ error: describeIssues(result.error.issues) }, 400);
  }
};
