// The Overview tab's live facts (docs/dashboard.md "A pod's Overview"): htmx swaps the facts in
// again every 2 s. A swap would throw away what the person is doing there — text selected in the
// SSH command, the health fix's form while it is sent or while it shows its answer — so a poll is
// skipped while focus is inside the live region or one of its forms is busy or has something to say.

document.addEventListener("htmx:beforeRequest", (event) => {
  const region = event.target;
  if (!(region instanceof HTMLElement) || region.dataset.liveRegion === undefined) return;
  const busy =
    region.contains(document.activeElement) ||
    region.querySelector("form[aria-busy], [data-error]:not([hidden]), [data-status]:not([hidden])");
  if (busy) event.preventDefault();
});
