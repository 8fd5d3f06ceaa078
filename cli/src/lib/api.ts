import type { paths } from "../api/openapi";
import { ApiError, CliError, EXIT } from "./errors";

/**
 * A thin client of the public REST API, typed from the OpenAPI document (api/openapi.d.ts, generated
 * from the Worker's /openapi.json): paths, parameters and JSON answers are the API's own.
 */
type Method = "get" | "post" | "put" | "patch" | "delete";
type Op<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type JsonOf<R> = R extends { content: { "application/json": infer J } } ? J : undefined;
type Responses<O> = O extends { responses: infer R } ? R : never;
/** The JSON of the operation's 2xx answers. */
export type Ok<P extends keyof paths, M extends Method> = {
  [S in keyof Responses<Op<P, M>>]: S extends 200 | 201 | 202 ? JsonOf<Responses<Op<P, M>>[S]> : never;
}[keyof Responses<Op<P, M>>];
type PathParams<O> = O extends { parameters: { path: infer X } } ? X : never;
type QueryParams<O> = O extends { parameters: { query?: infer Q } } ? Q : never;
type JsonBody<O> = O extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;

export interface RequestOptions<O> {
  params?: PathParams<O>;
  query?: QueryParams<O>;
  body?: JsonBody<O>;
}

export interface Credential {
  token: string;
  /** where it came from: `--token`, `PODHOST_TOKEN` or the stored login */
  source: "flag" | "env" | "login";
}

export class Api {
  constructor(
    readonly base: string,
    readonly credential: Credential | undefined,
  ) {}

  url(template: string, params?: Record<string, unknown>, query?: Record<string, unknown>): string {
    const pathname = template.replace(/\{([a-zA-Z]+)\}/g, (_, name: string) => {
      const value = params?.[name];
      if (value === undefined) throw new CliError(`missing ${name}`, EXIT.usage);
      return encodeURIComponent(String(value));
    });
    const url = new URL(pathname, this.base);
    for (const [k, v] of Object.entries(query ?? {}))
      if (v !== undefined && v !== null) url.searchParams.set(k, String(v));
    return url.toString();
  }

  headers(extra?: Record<string, string>): Record<string, string> {
    const headers: Record<string, string> = { "user-agent": "podhost-cli", ...extra };
    if (this.credential) headers.authorization = `Bearer ${this.credential.token}`;
    return headers;
  }

  /** One JSON call; an error answer throws ApiError with the API's `{error}` and the status. */
  async call<P extends keyof paths, M extends Method>(
    method: M,
    path: P,
    options: RequestOptions<Op<P, M>> = {},
  ): Promise<Ok<P, M>> {
    const res = await this.fetch(method, path as string, options as Parameters<Api["fetch"]>[2]);
    return (await readJson(res)) as Ok<P, M>;
  }

  /** The raw answer (streams, downloads), already checked for an error status. */
  async fetch(
    method: Method,
    path: string,
    options: {
      params?: Record<string, unknown>;
      query?: Record<string, unknown>;
      body?: unknown;
      raw?: RequestInit["body"];
      contentType?: string;
      signal?: AbortSignal;
    } = {},
  ): Promise<Response> {
    const url = this.url(path, options.params, options.query);
    const extra: Record<string, string> = {};
    let body: RequestInit["body"] = options.raw;
    if (options.body !== undefined) {
      extra["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    } else if (options.contentType) extra["content-type"] = options.contentType;
    let res: Response;
    try {
      res = await fetch(url, {
        method: method.toUpperCase(),
        headers: this.headers(extra),
        body,
        signal: options.signal,
        // a streamed upload body (Node's fetch needs it said)
        ...(body && typeof body === "object" && "getReader" in body ? { duplex: "half" } : {}),
      } as RequestInit);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new CliError(`cannot reach ${this.base}: ${cause?.code ?? cause?.message ?? String(error)}`);
    }
    if (!res.ok) throw await apiError(res, this.credential);
    return res;
  }
}

async function readJson(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(`the API answered ${res.status} with something that is not JSON`);
  }
}

/** The API's `{error}` text and status; a 401 says how to sign in. */
export async function apiError(res: Response, credential?: Credential): Promise<ApiError> {
  let body: unknown;
  const text = await res.text().catch(() => "");
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  const said =
    typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string"
      ? (body as { error: string }).error
      : `HTTP ${res.status}`;
  let message = said;
  if (res.status === 401) {
    const from =
      credential?.source === "flag"
        ? " (the token given with --token)"
        : credential?.source === "env"
          ? " (the token in PODHOST_TOKEN)"
          : credential
            ? " (the stored login: run podhost login)"
            : ": run podhost login, or set PODHOST_TOKEN";
    message = `${said}${from}`;
  }
  return new ApiError(message, res.status, body);
}
