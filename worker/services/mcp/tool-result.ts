import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type Result, statusOfErrorCode } from "../../../shared/errors";

/**
 * A verb's result as an MCP tool result. Success is the same JSON the REST route answers (as text,
 * and as structured content when it is an object); a failure is a tool error naming the status and
 * the reason, exactly the REST route's `{error}`, so the assistant can read it and act on it.
 */
export function toolResult<T>(result: Result<T>): CallToolResult {
  if (!result.ok) {
    const retry = result.retryAfter === undefined ? "" : ` (retry after ${result.retryAfter} s)`;
    return toolError(statusOfErrorCode[result.code], `${result.message}${retry}`);
  }
  const value = result.value === undefined ? { status: "ok" } : result.value;
  const structured =
    value !== null && typeof value === "object" && !Array.isArray(value)
      ? { structuredContent: value as Record<string, unknown> }
      : {};
  return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }], ...structured };
}

export const toolError = (status: number, message: string): CallToolResult => ({
  isError: true,
  content: [{ type: "text", text: `${status}: ${message}` }],
});
