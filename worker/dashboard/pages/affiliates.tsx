import type { Dashboard } from "../../services/affiliates/dashboard";
import type { listEarnings, listPayouts, listReferrals } from "../../services/affiliates/lists";
import { ApiForm } from "../components/api-form";
import { Curl, type CurlCall } from "../components/curl";
import { DataTable } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";
import { money } from "./billing";

type Value<F extends (...a: never[]) => unknown> =
  Awaited<ReturnType<F>> extends infer R ? (R extends { ok: true; value: infer V } ? V : never) : never;

export interface Enrolled {
  dashboard: Dashboard;
  referrals: Value<typeof listReferrals>;
  earnings: Value<typeof listEarnings>;
  payouts: Value<typeof listPayouts>;
}

const listCalls: CurlCall[] = [
  { method: "GET", path: "/api/affiliates/dashboard", note: "Link, tier and totals" },
  { method: "GET", path: "/api/affiliates/referrals?limit=50&offset=0", note: "Referrals" },
  { method: "GET", path: "/api/affiliates/earnings?limit=50&offset=0", note: "Earnings" },
  { method: "GET", path: "/api/affiliates/payouts?limit=50&offset=0", note: "Payouts" },
];

/** The user's affiliate account (docs/affiliates.md), or the offer to enroll. */
export function AffiliatesPage({ page, enrolled }: { page: PageContext; enrolled: Enrolled | null }) {
  if (!enrolled)
    return (
      <Page page={page} section="affiliates" title="Affiliates">
        <div class="page-head">
          <h1>Affiliates</h1>
        </div>
        <section class="card">
          <p>
            Refer people to podhost and earn a share of what they pay: your own link, a commission that grows
            with the revenue you bring.
          </p>
          <ApiForm action="/api/affiliates/enroll" success="Enrolled.">
            <button type="submit" class="primary">
              Enroll as an affiliate
            </button>
          </ApiForm>
        </section>
        <Curl base={page.base} calls={[{ method: "POST", path: "/api/affiliates/enroll", note: "Enroll" }]} />
      </Page>
    );
  const { dashboard: d, referrals, earnings, payouts } = enrolled;
  const a = d.affiliate;
  return (
    <Page page={page} section="affiliates" title="Affiliates">
      <div class="page-head">
        <h1>Affiliates</h1>
        <span class="muted">
          {d.tier.name} tier · {d.tier.commission_rate}% commission · {a.status}
        </span>
      </div>

      <section class="card">
        <h2>Your link</h2>
        <p>
          <code>{d.referral_link}</code>{" "}
          <button type="button" class="small" data-copy={d.referral_link}>
            Copy link
          </button>
        </p>
        <p class="muted">
          Also: <code>{d.referral_link_alt}</code> · {d.visit_count} visits
        </p>
      </section>

      <section class="card">
        <h2>Tier</h2>
        {d.next_tier ? (
          <>
            <label>
              {`Referred revenue ${money(a.total_revenue)} of ${money(d.next_tier.milestone_amount)} to ${d.next_tier.name} (${d.next_tier.commission_rate}%, bonus ${money(d.next_tier.bonus_amount)})`}
              <progress max={100} value={d.progress_pct}>
                {d.progress_pct}%
              </progress>
            </label>
            <p class="muted">{d.progress_pct}% of the way</p>
          </>
        ) : (
          <p>Top tier reached: referred revenue {money(a.total_revenue)}.</p>
        )}
        <dl class="facts">
          <dt>Referrals</dt>
          <dd>{a.referral_count}</dd>
          <dt>Earned</dt>
          <dd>{money(a.total_earnings)}</dd>
          <dt>Paid out</dt>
          <dd>{money(a.total_paid_out)}</dd>
          <dt>Pending</dt>
          <dd>{money(d.pending_balance)}</dd>
        </dl>
      </section>

      <h2>Referrals</h2>
      {referrals.referrals.length ? (
        <DataTable label="Referrals" columns={["Who", "Status", "Signed up", "Pods", "Plan"]}>
          <tbody>
            {referrals.referrals.map((r) => (
              <tr>
                <th scope="row">{r.email}</th>
                <td>{r.status}</td>
                <td>
                  <Time iso={r.signed_up_at} />
                </td>
                <td>{r.pod_count}</td>
                <td>
                  {r.plan_slug ?? "—"}
                  {r.subscription_status ? <span class="muted"> ({r.subscription_status})</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No referrals yet: share your link.</p>
      )}
      {referrals.total > referrals.referrals.length ? (
        <p class="muted">
          The newest {referrals.referrals.length} of {referrals.total}; the API pages further.
        </p>
      ) : null}

      <h2>Earnings</h2>
      {earnings.earnings.length ? (
        <DataTable label="Earnings" columns={["When", "Kind", "Payment", "Rate", "Earned"]}>
          <tbody>
            {earnings.earnings.map((e) => (
              <tr>
                <th scope="row">
                  <Time iso={e.created_at} />
                </th>
                <td>{e.kind}</td>
                <td>{money(e.payment_amount)}</td>
                <td>{e.commission_rate}%</td>
                <td>{money(e.commission_amount)}</td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No earnings yet.</p>
      )}

      <h2>Payouts</h2>
      {payouts.payouts.length ? (
        <DataTable label="Payouts" columns={["Paid", "Amount", "Method", "Status", "Reference"]}>
          <tbody>
            {payouts.payouts.map((p) => (
              <tr>
                <th scope="row">
                  <Time iso={p.paid_at} />
                </th>
                <td>{money(p.amount)}</td>
                <td>{p.method}</td>
                <td>{p.status}</td>
                <td>
                  {p.reference ?? ""}
                  {p.note ? <span class="muted"> {p.note}</span> : null}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      ) : (
        <p class="muted">No payouts yet.</p>
      )}

      <h2>Settings</h2>
      <section class="card">
        <ApiForm action="/api/affiliates/settings" method="PUT" success="Saved.">
          <div class="grid">
            <label>
              PayPal e-mail for payouts
              <input
                name="paypal_email"
                type="email"
                maxlength={254}
                value={a.paypal_email ?? ""}
                data-optional
              />
            </label>
            <label>
              Custom link name (3-30 of a-z, 0-9, -)
              <input
                name="custom_slug"
                minlength={3}
                maxlength={30}
                pattern="[a-z0-9\-]+"
                value={a.custom_slug ?? ""}
                data-optional
              />
            </label>
          </div>
          <button type="submit">Save settings</button>
        </ApiForm>
      </section>

      <Curl
        base={page.base}
        calls={[
          ...listCalls,
          {
            method: "PUT",
            path: "/api/affiliates/settings",
            body: { paypal_email: "me@example.com", custom_slug: "my-link" },
            note: "Settings",
          },
        ]}
      />
    </Page>
  );
}
