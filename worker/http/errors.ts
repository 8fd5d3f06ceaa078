import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { type ErrorCode, type Failure, type Result, statusOfErrorCode } from "../../shared/errors";

/** The one exception type of the API: a code from the shared enum, its status, and the `{error}` body. */
export class ApiError extends HTTPException {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(statusOfErrorCode[code] as ContentfulStatusCode, { message });
  }

  static from(failure: Failure): ApiError {
    const headers: Record<string, string> =
      failure.retryAfter === undefined ? {} : { "Retry-After": String(failure.retryAfter) };
    return new ApiError(failure.code, failure.message, failure.extra, headers);
  }
}

/** Services return results; handlers unwrap them here and the failure travels to `onError`. */
export function unwrap<T>(result: Result<T>): T {
  if (!result.ok) throw ApiError.from(result);
  return result.value;
}

const codeOfStatus = (status: number): ErrorCode => {
  const match = Object.entries(statusOfErrorCode).find(([, s]) => s === status);
  return (match?.[0] as ErrorCode | undefined) ?? (status >= 500 ? "internal" : "bad_request");
};

export function errorResponse(c: Context, err: Error): Response {
  const requestId = c.get("requestId");
  if (err instanceof ApiError) {
    return c.json({ error: err.message, ...err.extra }, err.status, err.headers);
  }
  if (err instanceof HTTPException) {
    // Hono's own (malformed JSON, body limit …): keep the status, give it our body shape.
    const status = err.status;
    const message = status === 413 ? "request body too large" : err.message || codeOfStatus(status);
    return c.json({ error: message }, status as ContentfulStatusCode);
  }
  console.error(JSON.stringify({ level: "error", requestId, message: err.message, stack: err.stack }));
  // The id goes in the message (and the X-Request-Id header): error bodies are `{error}` only.
  return c.json({ error: `internal error (request ${requestId})` }, 500);
}
