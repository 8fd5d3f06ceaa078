/**
 * Exit statuses (docs/cli.md#exit-codes): scripts and CI tell failures apart by them.
 * `exec` passes the remote command's own status through instead.
 */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  notFound: 3,
  auth: 4,
  deployFailed: 5,
} as const;

/** A failure the CLI reports as one line on stderr (and `{error, status}` with --json), then exits. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.error,
    /** the HTTP status, when the API said so */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The exit status an API answer maps to: 401/403 → 4, 404 → 3, anything else → 1. */
export function exitForStatus(status: number): number {
  if (status === 401 || status === 403) return EXIT.auth;
  if (status === 404) return EXIT.notFound;
  return EXIT.error;
}

/** An API error answer: its `{error}` text and the status. */
export class ApiError extends CliError {
  constructor(
    message: string,
    status: number,
    readonly body?: unknown,
  ) {
    super(message, exitForStatus(status), status);
  }
}
