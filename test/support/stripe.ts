import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A double of Stripe's REST API for the Worker's STRIPE_API_BASE, reached by the real `stripe` SDK:
 * form-encoded requests (`a[b][0]=v`), JSON objects back, Stripe's error objects (`{error: {type,
 * code, message, param}}` with 400/402/404), the `Idempotency-Key` header honoured (the same key
 * answers the same response, never a second object), and webhook deliveries signed as Stripe signs
 * them (`Stripe-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "t.payload">` with the endpoint secret).
 *
 * It serves what the service calls: customers, setup intents, payment methods (attach, detach,
 * read), invoices (create, finalize, pay, read), invoice items, payment intents, and Checkout
 * Sessions in `setup` mode (create, retrieve with `expand[]=setup_intent`) with their hosted page at
 * the session's `url` on the double itself: a card picker and a "Save card" button that, as
 * Stripe's page does, makes the PaymentMethod, a succeeded SetupIntent attaching it to the
 * session's customer, completes the session and redirects (303) to its `success_url` with
 * `{CHECKOUT_SESSION_ID}` filled in. Cards are made
 * from Stripe's test tokens: `tok_visa`, `tok_mastercard`, `tok_amex` succeed, `tok_chargeDeclined`
 * attaches but every charge on it is declined, as in Stripe's test mode.
 *
 * Tests in workerd cannot share its memory, so the double has a small control surface under
 * `/__double/`: the signed deliveries it queued (`GET /__double/deliveries?after=<n>`), a card
 * update as from the card network (`POST /__double/payment_methods/{id}/expiry`), and the
 * request log. The test is the transport: it posts the deliveries to the Worker, in any order,
 * as often as it likes — replays and out-of-order arrival are what it wants to show.
 */

export const STRIPE_DOUBLE_WEBHOOK_SECRET = "whsec_double_test_secret";
export const STRIPE_DOUBLE_KEY = "sk_test_double";

type Obj = Record<string, unknown>;

interface Card {
  brand: string;
  last4: string;
  exp_month: number;
  exp_year: number;
  declines: boolean;
}

const TEST_TOKENS: Record<string, Card> = {
  tok_visa: { brand: "visa", last4: "4242", exp_month: 12, exp_year: 2034, declines: false },
  tok_mastercard: { brand: "mastercard", last4: "4444", exp_month: 8, exp_year: 2033, declines: false },
  tok_amex: { brand: "amex", last4: "8431", exp_month: 3, exp_year: 2032, declines: false },
  tok_chargeDeclined: { brand: "visa", last4: "0002", exp_month: 10, exp_year: 2035, declines: true },
};

export interface Delivery {
  seq: number;
  event_id: string;
  type: string;
  payload: string;
  signature: string;
}

export interface StripeDouble {
  url: string;
  close(): Promise<void>;
}

/** `a[b][0][c]=v` form bodies into nested objects (Stripe's encoding, qs-style). */
export function parseForm(text: string): Obj {
  const out: Obj = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const parts = rawKey.split(/\[|\]\[|\]/).filter((p) => p !== "");
    let node: Obj = out;
    parts.forEach((part, i) => {
      if (i === parts.length - 1) node[part] = value;
      else {
        node[part] ??= {};
        node = node[part] as Obj;
      }
    });
  }
  return out;
}

export const signPayload = (payload: string, secret: string, timestamp = Math.floor(Date.now() / 1000)) =>
  `t=${timestamp},v1=${createHmac("sha256", secret).update(`${timestamp}.${payload}`).digest("hex")}`;

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

class StripeError {
  constructor(
    readonly status: number,
    readonly body: { type: string; message: string; code?: string; param?: string; decline_code?: string },
  ) {}
}

const missing = (kind: string, id: string) =>
  new StripeError(404, {
    type: "invalid_request_error",
    code: "resource_missing",
    message: `No such ${kind}: '${id}'`,
    param: "id",
  });

const required = (param: string) =>
  new StripeError(400, {
    type: "invalid_request_error",
    code: "parameter_missing",
    message: `Missing required param: ${param}.`,
    param,
  });

const int = (value: unknown, param: string): number => {
  if (typeof value !== "string" || !/^-?\d+$/.test(value))
    throw new StripeError(400, {
      type: "invalid_request_error",
      code: "parameter_invalid_integer",
      message: `Invalid integer: ${String(value)}`,
      param,
    });
  return Number(value);
};

export async function startStripeDouble(
  opts: { port?: number; webhookSecret?: string } = {},
): Promise<StripeDouble> {
  const secret = opts.webhookSecret ?? STRIPE_DOUBLE_WEBHOOK_SECRET;
  const now = () => Math.floor(Date.now() / 1000);
  const id = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;

  const customers = new Map<string, Obj>();
  const paymentMethods = new Map<string, Obj & { card: Card; customer: string | null }>();
  const setupIntents = new Map<string, Obj>();
  const invoices = new Map<string, Obj>();
  const invoiceItems = new Map<string, Obj>();
  const paymentIntents = new Map<string, Obj>();
  const checkoutSessions = new Map<string, Obj>();
  let selfUrl = "";
  const idempotent = new Map<string, { status: number; body: unknown }>();
  const deliveries: Delivery[] = [];
  const requests: { method: string; path: string; at: number }[] = [];

  function emit(type: string, object: Obj) {
    const event = {
      id: id("evt"),
      object: "event",
      api_version: "2025-01-27.acacia",
      created: now(),
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
      data: { object: structuredClone(object) },
    };
    const payload = JSON.stringify(event, null, 2);
    deliveries.push({
      seq: deliveries.length + 1,
      event_id: event.id,
      type,
      payload,
      signature: signPayload(payload, secret),
    });
  }

  const pmView = (pm: Obj & { card: Card; customer: string | null }) => {
    const { declines: _declines, ...card } = pm.card;
    return { ...pm, card: { ...card, funding: "credit", country: "US" } };
  };

  const invoiceView = (inv: Obj) => {
    const lines = [...invoiceItems.values()].filter((item) => item.invoice === inv.id);
    return {
      ...inv,
      lines: { object: "list", data: lines, has_more: false, url: `/v1/invoices/${inv.id}/lines` },
    };
  };

  const getCustomer = (cid: unknown) => {
    const c = typeof cid === "string" ? customers.get(cid) : undefined;
    if (!c) throw missing("customer", String(cid));
    return c;
  };

  const getPm = (pmId: string) => {
    const pm = paymentMethods.get(pmId);
    if (!pm) throw missing("payment_method", pmId);
    return pm;
  };

  const getInvoice = (invId: string) => {
    const inv = invoices.get(invId);
    if (!inv) throw missing("invoice", invId);
    return inv;
  };

  function chargeInvoice(inv: Obj, pmId: string | undefined): Obj {
    if (inv.status === "paid") return invoiceView(inv);
    if (inv.status !== "open")
      throw new StripeError(400, {
        type: "invalid_request_error",
        code: "invoice_not_open",
        message: `You can only pay an open invoice. This invoice is ${String(inv.status)}.`,
      });
    const customer = getCustomer(inv.customer);
    const chosen =
      pmId ??
      ((customer.invoice_settings as Obj | undefined)?.default_payment_method as string | undefined) ??
      undefined;
    if (!chosen)
      throw new StripeError(400, {
        type: "invalid_request_error",
        code: "invoice_no_customer_payment_method",
        message: "This customer has no attached payment source or default payment method.",
      });
    const pm = getPm(chosen);
    if (pm.customer !== inv.customer)
      throw new StripeError(400, {
        type: "invalid_request_error",
        code: "payment_method_unexpected_state",
        message: `The PaymentMethod ${chosen} does not belong to the Customer ${String(inv.customer)}.`,
        param: "payment_method",
      });
    const pi: Obj = {
      id: id("pi"),
      object: "payment_intent",
      amount: inv.amount_due,
      currency: inv.currency,
      customer: inv.customer,
      invoice: inv.id,
      payment_method: chosen,
      created: now(),
      status: "processing",
    };
    paymentIntents.set(pi.id as string, pi);
    inv.payment_intent = pi.id;
    inv.attempt_count = (inv.attempt_count as number) + 1;
    inv.attempted = true;
    if (pm.card.declines) {
      pi.status = "requires_payment_method";
      pi.last_payment_error = { type: "card_error", code: "card_declined", decline_code: "generic_decline" };
      emit("invoice.payment_failed", invoiceView(inv));
      throw new StripeError(402, {
        type: "card_error",
        code: "card_declined",
        decline_code: "generic_decline",
        message: "Your card was declined.",
      });
    }
    pi.status = "succeeded";
    inv.status = "paid";
    inv.paid = true;
    inv.amount_paid = inv.amount_due;
    inv.amount_remaining = 0;
    inv.status_transitions = { ...(inv.status_transitions as Obj), paid_at: now() };
    emit("invoice.paid", invoiceView(inv));
    return invoiceView(inv);
  }

  function cardFromToken(token: string) {
    const card = TEST_TOKENS[token];
    if (!card)
      throw new StripeError(400, {
        type: "invalid_request_error",
        code: "token_invalid",
        message: `No such token: '${token}'`,
        param: "card[token]",
      });
    const pm = {
      id: id("pm"),
      object: "payment_method",
      type: "card",
      card: { ...card },
      customer: null as string | null,
      created: now(),
      livemode: false,
    };
    paymentMethods.set(pm.id, pm);
    return pm;
  }

  /**
   * What Stripe's hosted page does when its button is pressed: the card made, a SetupIntent that
   * succeeded attaching it to the session's customer, the session complete. The success URL with
   * the session's id, or null when the session is not open.
   */
  function completeCheckout(cs: Obj, token: string): string | null {
    if (cs.status !== "open") return null;
    const pm = cardFromToken(token);
    pm.customer = cs.customer as string;
    emit("payment_method.attached", pmView(pm));
    const si: Obj = {
      id: id("seti"),
      object: "setup_intent",
      customer: cs.customer,
      payment_method: pm.id,
      status: "succeeded",
      usage: "off_session",
      created: now(),
    };
    si.client_secret = `${si.id}_secret_${randomBytes(12).toString("hex")}`;
    setupIntents.set(si.id as string, si);
    cs.setup_intent = si.id;
    cs.status = "complete";
    emit("checkout.session.completed", cs);
    return String(cs.success_url).replaceAll("{CHECKOUT_SESSION_ID}", cs.id as string);
  }

  const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

  /** The hosted page: pick a test card, press "Save card". */
  const checkoutPage = (cs: Obj) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Save a card · Stripe double</title></head>
<body><main>
<h1>Save a card</h1>
<form method="post" action="/checkout/pay/${escapeHtml(cs.id as string)}">
<label for="card">Card</label>
<select id="card" name="card">${Object.entries(TEST_TOKENS)
    .map(([token, c]) => `<option value="${token}">${c.brand} ending ${c.last4}</option>`)
    .join("")}</select>
<button type="submit">Save card</button>
</form>
<p><a href="${escapeHtml(String(cs.cancel_url))}">Cancel</a></p>
</main></body></html>`;

  function route(method: string, path: string, body: Obj): { status: number; body: unknown } {
    const seg = path.split("/").filter(Boolean);
    // seg[0] === "v1"
    const [, kind, objId, action] = seg;
    const res = (b: unknown, status = 200) => ({ status, body: b });

    if (kind === "customers" && method === "POST" && !objId) {
      const c: Obj = {
        id: id("cus"),
        object: "customer",
        created: now(),
        email: body.email ?? null,
        name: body.name ?? null,
        metadata: body.metadata ?? {},
        invoice_settings: { default_payment_method: null },
        livemode: false,
      };
      customers.set(c.id as string, c);
      return res(c);
    }
    if (kind === "customers" && objId && method === "GET") return res(getCustomer(objId));
    if (kind === "customers" && objId && method === "POST" && !action) {
      const c = getCustomer(objId);
      const settings = body.invoice_settings as Obj | undefined;
      if (settings && "default_payment_method" in settings) {
        const pmId = settings.default_payment_method as string;
        if (pmId && getPm(pmId).customer !== objId)
          throw new StripeError(400, {
            type: "invalid_request_error",
            message: `The customer does not have a payment method with the ID ${pmId}.`,
            param: "invoice_settings[default_payment_method]",
          });
        c.invoice_settings = { default_payment_method: pmId || null };
      }
      if (body.metadata) c.metadata = { ...(c.metadata as Obj), ...(body.metadata as Obj) };
      return res(c);
    }

    if (kind === "setup_intents" && method === "POST" && !objId) {
      if (!body.customer) throw required("customer");
      getCustomer(body.customer);
      const si: Obj = {
        id: id("seti"),
        object: "setup_intent",
        customer: body.customer,
        status: "requires_payment_method",
        usage: body.usage ?? "off_session",
        created: now(),
      };
      si.client_secret = `${si.id}_secret_${randomBytes(12).toString("hex")}`;
      setupIntents.set(si.id as string, si);
      return res(si);
    }

    if (kind === "payment_methods" && method === "POST" && !objId) {
      const token = (body.card as Obj | undefined)?.token;
      if (typeof token !== "string") throw required("card[token]");
      return res(pmView(cardFromToken(token)));
    }

    if (kind === "checkout" && objId === "sessions" && method === "POST" && !action) {
      if (body.mode !== "setup")
        throw new StripeError(400, {
          type: "invalid_request_error",
          message: "The double makes Checkout Sessions in `setup` mode only.",
          param: "mode",
        });
      if (!body.customer) throw required("customer");
      getCustomer(body.customer);
      if (!body.currency && !body.payment_method_types) throw required("currency");
      for (const param of ["success_url", "cancel_url"]) {
        const value = body[param];
        if (typeof value !== "string" || !/^https?:\/\//.test(value))
          throw new StripeError(400, {
            type: "invalid_request_error",
            code: "url_invalid",
            message: "Not a valid URL",
            param,
          });
      }
      const cs: Obj = {
        id: `cs_test_${randomBytes(16).toString("hex")}`,
        object: "checkout.session",
        mode: "setup",
        customer: body.customer,
        currency: body.currency ?? null,
        payment_method_types: Object.values((body.payment_method_types as Obj | undefined) ?? { 0: "card" }),
        success_url: body.success_url,
        cancel_url: body.cancel_url,
        metadata: body.metadata ?? {},
        status: "open",
        setup_intent: null,
        created: now(),
        expires_at: now() + 24 * 3600,
        livemode: false,
      };
      cs.url = `${selfUrl}/checkout/pay/${cs.id}`;
      checkoutSessions.set(cs.id as string, cs);
      return res(cs);
    }
    if (kind === "checkout" && objId === "sessions" && action && method === "GET") {
      const cs = checkoutSessions.get(action);
      if (!cs) throw missing("checkout.session", action);
      const expand = Object.values((body.expand as Obj | undefined) ?? {});
      const si = typeof cs.setup_intent === "string" ? setupIntents.get(cs.setup_intent) : undefined;
      return res({ ...cs, setup_intent: expand.includes("setup_intent") && si ? si : cs.setup_intent });
    }
    if (kind === "payment_methods" && objId && method === "GET" && !action) return res(pmView(getPm(objId)));
    if (kind === "payment_methods" && objId && action === "attach" && method === "POST") {
      const pm = getPm(objId);
      if (!body.customer) throw required("customer");
      getCustomer(body.customer);
      if (pm.customer && pm.customer !== body.customer)
        throw new StripeError(400, {
          type: "invalid_request_error",
          code: "payment_method_unexpected_state",
          message: "The payment method you provided has already been attached to a customer.",
        });
      if (!pm.customer) {
        pm.customer = body.customer as string;
        emit("payment_method.attached", pmView(pm));
      }
      return res(pmView(pm));
    }
    if (kind === "payment_methods" && objId && action === "detach" && method === "POST") {
      const pm = getPm(objId);
      if (!pm.customer)
        throw new StripeError(400, {
          type: "invalid_request_error",
          code: "payment_method_unexpected_state",
          message:
            "The payment method you provided is not attached to a customer so detachment is impossible.",
        });
      const c = customers.get(pm.customer);
      if (c && (c.invoice_settings as Obj | undefined)?.default_payment_method === pm.id)
        c.invoice_settings = { default_payment_method: null };
      pm.customer = null;
      emit("payment_method.detached", pmView(pm));
      return res(pmView(pm));
    }

    if (kind === "invoiceitems" && method === "POST" && !objId) {
      if (!body.customer) throw required("customer");
      getCustomer(body.customer);
      const invId = body.invoice as string | undefined;
      if (invId && getInvoice(invId).status !== "draft")
        throw new StripeError(400, {
          type: "invalid_request_error",
          message: "You can only add invoice items to a draft invoice.",
          param: "invoice",
        });
      if (invId && getInvoice(invId).customer !== body.customer)
        throw new StripeError(400, {
          type: "invalid_request_error",
          message: "customer mismatch",
          param: "invoice",
        });
      const amount = int(body.amount, "amount");
      const item: Obj = {
        id: id("ii"),
        object: "invoiceitem",
        customer: body.customer,
        invoice: invId ?? null,
        amount,
        currency: body.currency ?? "usd",
        description: body.description ?? null,
        metadata: body.metadata ?? {},
        date: now(),
      };
      invoiceItems.set(item.id as string, item);
      return res(item);
    }

    if (kind === "invoices" && method === "POST" && !objId) {
      if (!body.customer) throw required("customer");
      getCustomer(body.customer);
      const inv: Obj = {
        id: id("in"),
        object: "invoice",
        customer: body.customer,
        status: "draft",
        currency: body.currency ?? "usd",
        collection_method: body.collection_method ?? "charge_automatically",
        auto_advance: body.auto_advance === "true",
        amount_due: 0,
        amount_paid: 0,
        amount_remaining: 0,
        total: 0,
        subtotal: 0,
        attempt_count: 0,
        attempted: false,
        paid: false,
        payment_intent: null,
        hosted_invoice_url: null,
        metadata: body.metadata ?? {},
        description: body.description ?? null,
        created: now(),
        status_transitions: { finalized_at: null, paid_at: null },
      };
      invoices.set(inv.id as string, inv);
      return res(invoiceView(inv));
    }
    if (kind === "invoices" && objId && method === "GET" && !action)
      return res(invoiceView(getInvoice(objId)));
    if (kind === "invoices" && objId && action === "finalize" && method === "POST") {
      const inv = getInvoice(objId);
      if (inv.status !== "draft")
        throw new StripeError(400, {
          type: "invalid_request_error",
          code: "invoice_not_editable",
          message: `This invoice is already finalized, you can't re-finalize a non-draft invoice.`,
        });
      const total = [...invoiceItems.values()]
        .filter((item) => item.invoice === inv.id)
        .reduce((sum, item) => sum + (item.amount as number), 0);
      inv.subtotal = total;
      inv.total = total;
      inv.amount_due = Math.max(0, total);
      inv.amount_remaining = inv.amount_due;
      inv.hosted_invoice_url = `https://invoice.stripe.double/i/${inv.id}`;
      inv.status_transitions = { finalized_at: now(), paid_at: null };
      if (inv.amount_due === 0) {
        inv.status = "paid";
        inv.paid = true;
        inv.status_transitions = { finalized_at: now(), paid_at: now() };
        emit("invoice.finalized", invoiceView(inv));
        emit("invoice.paid", invoiceView(inv));
      } else {
        inv.status = "open";
        emit("invoice.finalized", invoiceView(inv));
      }
      return res(invoiceView(inv));
    }
    if (kind === "invoices" && objId && action === "pay" && method === "POST") {
      return res(chargeInvoice(getInvoice(objId), body.payment_method as string | undefined));
    }

    if (kind === "payment_intents" && objId && method === "GET") {
      const pi = paymentIntents.get(objId);
      if (!pi) throw missing("payment_intent", objId);
      return res(pi);
    }

    throw new StripeError(404, {
      type: "invalid_request_error",
      message: `Unrecognized request URL (${method}: ${path}).`,
    });
  }

  const reply = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json", "request-id": id("req") });
    res.end(JSON.stringify(body));
  };

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://double");
    const method = req.method ?? "GET";
    const text = await readBody(req);
    if (url.pathname === "/__double/deliveries") {
      const after = Number(url.searchParams.get("after") ?? 0);
      return reply(res, 200, { deliveries: deliveries.filter((d) => d.seq > after) });
    }
    if (url.pathname === "/__double/requests") return reply(res, 200, { requests });
    const hosted = /^\/checkout\/pay\/([^/]+)$/.exec(url.pathname);
    if (hosted) {
      const cs = checkoutSessions.get(hosted[1] ?? "");
      if (!cs) {
        res.writeHead(404, { "content-type": "text/plain" });
        return res.end("This checkout session does not exist.");
      }
      if (method === "GET") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        return res.end(checkoutPage(cs));
      }
      const token = new URLSearchParams(text).get("card") ?? "tok_visa";
      let next: string | null;
      try {
        next = completeCheckout(cs, token);
      } catch (error) {
        if (!(error instanceof StripeError)) throw error;
        res.writeHead(400, { "content-type": "text/plain" });
        return res.end(error.body.message);
      }
      if (!next) {
        res.writeHead(409, { "content-type": "text/plain" });
        return res.end("This checkout session is no longer open.");
      }
      res.writeHead(303, { location: next });
      return res.end();
    }
    const expiry = /^\/__double\/payment_methods\/([^/]+)\/expiry$/.exec(url.pathname);
    if (expiry && method === "POST") {
      const pm = paymentMethods.get(expiry[1] ?? "");
      if (!pm) return reply(res, 404, { error: { type: "invalid_request_error", message: "no such pm" } });
      const { exp_month, exp_year } = JSON.parse(text) as { exp_month: number; exp_year: number };
      pm.card = { ...pm.card, exp_month, exp_year };
      emit("payment_method.updated", pmView(pm));
      return reply(res, 200, pmView(pm));
    }

    requests.push({ method, path: url.pathname, at: Date.now() });
    if (!/^Bearer sk_test_\S+$/.test(req.headers.authorization ?? ""))
      return reply(res, 401, {
        error: { type: "invalid_request_error", message: "Invalid API Key provided." },
      });
    const key = req.headers["idempotency-key"];
    const cacheKey = typeof key === "string" ? `${method} ${url.pathname} ${key}` : undefined;
    const cached = cacheKey ? idempotent.get(cacheKey) : undefined;
    if (cached) return reply(res, cached.status, cached.body);
    let answer: { status: number; body: unknown };
    try {
      // a GET's parameters (`expand[0]=…`) are in its query, as the SDK sends them
      answer = route(method, url.pathname, parseForm(method === "GET" ? url.search.slice(1) : text));
    } catch (error) {
      if (!(error instanceof StripeError)) throw error;
      answer = { status: error.status, body: { error: error.body } };
    }
    // Stripe keeps the first answer of a key, success or error (a 5xx would not be kept).
    if (cacheKey) idempotent.set(cacheKey, answer);
    return reply(res, answer.status, answer.body);
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  selfUrl = `http://127.0.0.1:${port}`;
  return {
    url: selfUrl,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
