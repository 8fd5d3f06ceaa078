// Adding a card on Stripe's hosted page (docs/dashboard.md "Billing"): the "Add a card" form calls
// POST /api/billing/setup-session through dash.js; its answer's `url` is Stripe's page, where the
// card is typed (never on this origin). This sends the browser there; Stripe sends it back to
// /app/billing/card-added, which records the card.

document.addEventListener("api:done", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.then !== "setup-session") return;
  const url = event.detail?.data?.url;
  let target;
  try {
    target = new URL(url);
  } catch {
    return;
  }
  if (target.protocol !== "https:" && target.protocol !== "http:") return;
  window.location.assign(target.href);
});
