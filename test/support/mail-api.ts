import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A double of Resend's send API for the Worker's MAIL_API_BASE, speaking its wire protocol:
 * `POST /emails` with `Authorization: Bearer <key>` and a JSON body `{from, to, subject, text?,
 * html?}` (`to` a string or an array of at most 50), answered `200 {"id": "<uuid>"}`; Resend's error
 * objects `{statusCode, name, message}` with 401 `missing_api_key`, 403 `invalid_api_key`, 422
 * `validation_error` / `missing_required_field`; the `Idempotency-Key` header honoured (the same key
 * answers the same id and sends nothing twice).
 *
 * Tests in workerd cannot share its memory, so the double has a small control surface under
 * `/__double/`: `POST /__double/failures` `{to, status, times}` makes the next `times` sends to `to`
 * answer `status` (Resend's error object for it), `GET /__double/emails?to=` lists what was
 * delivered to an address, `GET /__double/requests?to=` every send request seen for it (refused ones
 * too), with the status it was answered.
 */

export const MAIL_DOUBLE_KEY = "re_double_test_key";

interface Delivered {
  id: string;
  from: string;
  to: string[];
  subject: string;
  text: string | null;
  html: string | null;
  idempotency_key: string | null;
}

interface Seen {
  to: string[];
  status: number;
  idempotency_key: string | null;
}

export interface MailApiDouble {
  url: string;
  close(): Promise<void>;
}

const ERROR_NAMES: Record<number, string> = {
  400: "invalid_idempotency_key",
  401: "missing_api_key",
  403: "invalid_api_key",
  404: "not_found",
  409: "concurrent_idempotent_requests",
  422: "validation_error",
  429: "rate_limit_exceeded",
  500: "application_error",
  503: "application_error",
};

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (chunk: string) => {
      text += chunk;
    });
    req.on("end", () => resolve(text));
    req.on("error", reject);
  });

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

const resendError = (res: ServerResponse, status: number, message: string, name = ERROR_NAMES[status]) =>
  json(res, status, { statusCode: status, name: name ?? "application_error", message });

const recipients = (to: unknown): string[] | null => {
  const list = typeof to === "string" ? [to] : to;
  if (!Array.isArray(list) || list.length === 0 || list.length > 50) return null;
  return list.every((a) => typeof a === "string" && /^[^@\s]+@[^@\s]+$/.test(a))
    ? list.map((a: string) => a.toLowerCase())
    : null;
};

export async function startMailApiDouble(): Promise<MailApiDouble> {
  const delivered: Delivered[] = [];
  const seen: Seen[] = [];
  const byKey = new Map<string, string>();
  const failures = new Map<string, { status: number; times: number }>();

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://double");
    const body = await readBody(req);
    if (url.pathname === "/__double/failures" && req.method === "POST") {
      const { to, status, times } = JSON.parse(body) as { to: string; status: number; times: number };
      failures.set(to.toLowerCase(), { status, times });
      return json(res, 200, { ok: true });
    }
    if (url.pathname === "/__double/emails" && req.method === "GET") {
      const to = (url.searchParams.get("to") ?? "").toLowerCase();
      return json(res, 200, { data: delivered.filter((m) => m.to.includes(to)) });
    }
    if (url.pathname === "/__double/requests" && req.method === "GET") {
      const to = (url.searchParams.get("to") ?? "").toLowerCase();
      return json(res, 200, { data: seen.filter((m) => m.to.includes(to)) });
    }
    if (url.pathname !== "/emails") return resendError(res, 404, "The requested endpoint does not exist.");
    if (req.method !== "POST") return resendError(res, 405, "Method not allowed", "method_not_allowed");

    const auth = req.headers.authorization;
    if (!auth) return resendError(res, 401, "Missing API key in the authorization header.");
    if (auth !== `Bearer ${MAIL_DOUBLE_KEY}`) return resendError(res, 403, "API key is invalid.");
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return resendError(res, 422, "Invalid JSON body.");
    }
    const to = recipients(payload.to);
    const idempotencyKey = (req.headers["idempotency-key"] as string | undefined) ?? null;
    const answer = (status: number, send: () => void) => {
      seen.push({ to: to ?? [], status, idempotency_key: idempotencyKey });
      send();
    };
    for (const field of ["from", "subject"] as const) {
      if (typeof payload[field] !== "string" || payload[field] === "") {
        return answer(422, () =>
          resendError(res, 422, `Missing \`${field}\` field.`, "missing_required_field"),
        );
      }
    }
    if (!to) return answer(422, () => resendError(res, 422, "Invalid `to` field."));
    if (typeof payload.text !== "string" && typeof payload.html !== "string") {
      return answer(422, () =>
        resendError(res, 422, "Missing `html` or `text` field.", "missing_required_field"),
      );
    }
    if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > 256)) {
      return answer(400, () => resendError(res, 400, "Idempotency key must be 1-256 characters."));
    }
    const armed = to.map((a) => [a, failures.get(a)] as const).find(([, f]) => f && f.times > 0);
    if (armed?.[1]) {
      const [address, failure] = armed;
      failures.set(address, { ...failure, times: failure.times - 1 });
      return answer(failure.status, () =>
        resendError(res, failure.status, `The double refused this send (${failure.status}).`),
      );
    }
    const known = idempotencyKey ? byKey.get(idempotencyKey) : undefined;
    if (known) return answer(200, () => json(res, 200, { id: known }));
    const id = randomUUID();
    if (idempotencyKey) byKey.set(idempotencyKey, id);
    delivered.push({
      id,
      from: payload.from as string,
      to,
      subject: payload.subject as string,
      text: typeof payload.text === "string" ? payload.text : null,
      html: typeof payload.html === "string" ? payload.html : null,
      idempotency_key: idempotencyKey,
    });
    return answer(200, () => json(res, 200, { id }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
