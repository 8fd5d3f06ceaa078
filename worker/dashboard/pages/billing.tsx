import { PLANS } from "../../../shared/catalog";
import type { CreditView } from "../../services/billing/credits";
import type { PaymentMethodView } from "../../services/billing/payment-methods";
import type { SubscriptionView } from "../../services/billing/subscriptions";
import type { getUpcoming } from "../../services/billing/upcoming";
import type { InvoiceView } from "../../services/billing/views";
import type { TeamView } from "../../services/teams/teams";
import { ApiForm } from "../components/api-form";
import { Curl, type CurlCall } from "../components/curl";
import { DataTable } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";
import { monthly } from "./pods-list";

interface BillingPageProps {
  page: PageContext;
  team: TeamView;
  subscription: SubscriptionView;
  upcoming: Awaited<ReturnType<typeof getUpcoming>>;
  invoices: InvoiceView[];
  methods: PaymentMethodView[];
  credits: { available: number; credits: CreditView[] };
  /** back from Stripe's hosted setup page: the card was added, or the page was left */
  card?: "added" | "cancelled";
}

/** "$12.34" (or "12.34 EUR" in another currency), from cents. */
export const money = (cents: number, currency = "usd") =>
  currency.toLowerCase() === "usd"
    ? `$${(cents / 100).toFixed(2)}`
    : `${(cents / 100).toFixed(2)} ${currency.toUpperCase()}`;

/** Only Stripe's own https pages are linked; anything else is not made a link. */
const httpsUrl = (url: string | null) => (url && /^https:\/\/[^\s]+$/.test(url) ? url : null);

const planName = (slug: string) => PLANS.find((p) => p.slug === slug)?.name ?? slug;

/**
 * The active team's billing. Every change is the public API's (the owner's only: a member sees the
 * same figures and no buttons); what the API refuses (409 with pods left, 402 …) shows in the form.
 */
export function BillingPage({
  page,
  team,
  subscription,
  upcoming,
  invoices,
  methods,
  credits,
  card,
}: BillingPageProps) {
  const owner = team.role === "owner";
  const sub = subscription;
  const troubled = sub.status === "past_due" || sub.status === "suspended";
  const calls: CurlCall[] = [
    { method: "GET", path: "/api/billing/subscription", note: "The subscription" },
    { method: "GET", path: "/api/billing/upcoming", note: "The upcoming charges" },
    { method: "GET", path: "/api/billing/invoices", note: "Invoices" },
    { method: "GET", path: "/api/billing/payment-methods", note: "Cards" },
    { method: "GET", path: "/api/billing/credits", note: "Credits" },
    ...(owner
      ? [
          {
            method: "PUT",
            path: "/api/billing/subscription/plan",
            body: { plan_slug: sub.plan_slug },
            note: "Change the plan",
          },
          {
            method: "POST",
            path: "/api/billing/subscription/cancel",
            note: "Cancel (every pod deleted first)",
          },
          { method: "POST", path: "/api/billing/subscription/resume", note: "Resume after paying" },
          {
            method: "POST",
            path: "/api/billing/setup-session",
            note: "Add a card on Stripe's hosted page: open the answer's url in a browser",
          },
          {
            method: "POST",
            path: "/api/billing/setup-session/cs_…/complete",
            note: "Record the card that page saved, as the default",
          },
          { method: "POST", path: "/api/billing/setup-intent", note: "A setup intent for Stripe.js" },
          {
            method: "POST",
            path: "/api/billing/payment-methods",
            body: { processor_payment_method_id: "pm_…" },
            note: "Attach the card Stripe.js confirmed",
          },
        ]
      : []),
  ];
  return (
    <Page page={page} section="billing" title="Billing" scripts={owner ? ["card.js"] : []}>
      <div class="page-head">
        <h1>Billing</h1>
        <span class="muted">
          {team.name} · you are {team.role}
        </span>
      </div>
      {card === "added" ? (
        <p class="notice" role="status">
          Card added: it is the team's default card now.
        </p>
      ) : null}
      {card === "cancelled" ? (
        <p class="notice" role="status">
          No card was added: Stripe's page was left before saving one.
        </p>
      ) : null}
      {owner ? null : <p class="notice">Only the team's owner changes its billing; you see it as it is.</p>}
      {sub.processor === "none" ? (
        <p class="notice">
          No payment processor is configured here: charges are counted, nothing is collected.
        </p>
      ) : null}

      <h2>Subscription</h2>
      <section class="card" id="subscription">
        <dl class="facts">
          <dt>Plan</dt>
          <dd>{planName(sub.plan_slug)}</dd>
          <dt>Status</dt>
          <dd>
            <span class={`badge billing-${sub.status}`}>{sub.status.replace("_", " ")}</span>
          </dd>
          <dt>Period</dt>
          <dd>
            <Time iso={sub.current_period_start} /> – <Time iso={sub.current_period_end} />
          </dd>
        </dl>
        {owner && sub.status !== "cancelled" ? (
          <ApiForm action="/api/billing/subscription/plan" method="PUT" success="Plan changed.">
            <label>
              Plan
              <select name="plan_slug">
                {PLANS.map((p) => (
                  <option value={p.slug} selected={p.slug === sub.plan_slug}>
                    {p.name} ({monthly(p.monthlyPrice)} a pod)
                  </option>
                ))}
              </select>
            </label>
            <button type="submit">Change plan</button>
          </ApiForm>
        ) : null}
        {owner && sub.status === "cancelled" ? (
          <ApiForm action="/api/billing/subscribe" success="Subscribed.">
            <label>
              Plan
              <select name="plan_slug">
                {PLANS.map((p) => (
                  <option value={p.slug}>
                    {p.name} ({monthly(p.monthlyPrice)} a pod)
                  </option>
                ))}
              </select>
            </label>
            <button type="submit" class="primary">
              Subscribe again
            </button>
          </ApiForm>
        ) : null}
        {owner && troubled ? (
          <ApiForm action="/api/billing/subscription/resume" class="inline">
            <button type="submit" class="primary">
              Resume (after paying the open invoices)
            </button>
          </ApiForm>
        ) : null}
        {owner && sub.status !== "cancelled" ? (
          <ApiForm
            action="/api/billing/subscription/cancel"
            confirm={`Cancel the subscription of ${team.name}? Every pod must be deleted first.`}
            class="inline"
          >
            <button type="submit" class="danger">
              Cancel subscription
            </button>
          </ApiForm>
        ) : null}
      </section>

      <h2>Upcoming charges</h2>
      <p class="muted">
        This period (<Time iso={upcoming.period_start} /> – <Time iso={upcoming.period_end} />
        ): subtotal {money(upcoming.subtotal)}, credits {money(upcoming.credits_available)}, estimated{" "}
        <strong>{money(upcoming.estimated_total)}</strong>.
      </p>
      {upcoming.charges.length ? (
        <DataTable label="Upcoming charges" columns={["Pod", "Plan", "Days", "Amount"]}>
          <tbody>
            {upcoming.charges.map((ch) => (
              <tr>
                <th scope="row">
                  {ch.pod_name} <span class="muted">{ch.pod_status}</span>
                </th>
                <td>{ch.plan_name}</td>
                <td>{ch.active_days}</td>
                <td>{money(ch.amount)}</td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No charges yet this period.</p>
      )}

      <h2>Invoices</h2>
      {invoices.length ? (
        <DataTable label="Invoices" columns={["Period", "Status", "Due", "Paid", { hidden: "Actions" }]}>
          <tbody>
            {invoices.map((inv) => {
              const hosted = httpsUrl(inv.hosted_invoice_url);
              return (
                <tr>
                  <th scope="row">
                    <Time iso={inv.period_start} /> – <Time iso={inv.period_end} />
                  </th>
                  <td>
                    <span class={`badge invoice-${inv.status}`}>{inv.status}</span>
                  </td>
                  <td>
                    {money(inv.amount_due, inv.currency)}
                    {inv.credits_applied ? (
                      <span class="muted"> (credits {money(inv.credits_applied, inv.currency)})</span>
                    ) : null}
                  </td>
                  <td>{money(inv.amount_paid, inv.currency)}</td>
                  <td class="actions">
                    {hosted ? (
                      <a href={hosted} rel="noopener noreferrer" target="_blank">
                        Invoice at Stripe
                      </a>
                    ) : null}
                    {owner && inv.status === "open" ? (
                      <ApiForm
                        action={`/api/billing/invoices/${encodeURIComponent(inv.id)}/pay`}
                        confirm={`Pay ${money(inv.amount_due, inv.currency)} with the default card?`}
                        class="inline"
                      >
                        <button type="submit" class="small primary">
                          Pay {money(inv.amount_due, inv.currency)}
                        </button>
                      </ApiForm>
                    ) : null}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No invoices yet.</p>
      )}

      <h2>Cards</h2>
      {methods.length ? (
        <DataTable label="Cards" columns={["Card", "Expires", "Default", { hidden: "Actions" }]}>
          <tbody>
            {methods.map((m) => (
              <tr>
                <th scope="row">
                  {m.card_brand ?? m.type} ···· {m.card_last4 ?? "????"}
                </th>
                <td>
                  {m.card_exp_month && m.card_exp_year ? `${m.card_exp_month}/${m.card_exp_year}` : "—"}
                </td>
                <td>{m.is_default ? "default" : ""}</td>
                <td class="actions">
                  {owner && !m.is_default ? (
                    <ApiForm action="/api/billing/payment-methods/default" class="inline">
                      <input type="hidden" name="payment_method_id" value={m.id} />
                      <button type="submit" class="small">
                        Make default
                      </button>
                    </ApiForm>
                  ) : null}
                  {owner ? (
                    <ApiForm
                      action={`/api/billing/payment-methods/${encodeURIComponent(m.id)}`}
                      method="DELETE"
                      confirm={`Remove the card ending ${m.card_last4 ?? ""}?`}
                      class="inline"
                    >
                      <button type="submit" class="small danger">
                        Remove card {m.card_last4 ?? ""}
                      </button>
                    </ApiForm>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No card yet.</p>
      )}
      {owner && sub.processor !== "none" ? (
        <ApiForm action="/api/billing/setup-session" then="setup-session" id="add-card">
          <button type="submit" class="primary">
            Add a card
          </button>
          <span class="muted"> on Stripe's page; you come back here once it is saved.</span>
        </ApiForm>
      ) : null}

      <h2>Credits</h2>
      <p>
        Available: <strong>{money(credits.available)}</strong>
      </p>
      {credits.credits.length ? (
        <DataTable label="Credits" columns={["Reason", "Type", "Left", "Expires"]}>
          <tbody>
            {credits.credits.map((cr) => (
              <tr>
                <th scope="row">{cr.reason}</th>
                <td>{cr.type}</td>
                <td>
                  {money(cr.remaining)} of {money(cr.amount)}
                </td>
                <td>{cr.expires_at ? <Time iso={cr.expires_at} /> : "never"}</td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No credits.</p>
      )}

      <Curl base={page.base} calls={calls} />
    </Page>
  );
}
