// Reveal on demand (components/reveal.tsx): a secret is not in the page until the user asks; then
// this GETs it from the public API with the session cookie and shows one field of the answer.

/** `a.b` of an object, or undefined. */
function pick(data, path) {
  let value = data;
  for (const key of path.split(".")) value = value == null ? undefined : value[key];
  return value;
}

async function reveal(box, button) {
  const out = box.querySelector("[data-reveal-out]");
  const copy = box.querySelector("[data-reveal-copy]");
  const error = box.querySelector("[data-error]");
  error.hidden = true;
  button.disabled = true;
  try {
    const res = await fetch(box.dataset.reveal, {
      credentials: "same-origin",
      headers: { accept: "application/json" },
    });
    const data = await res.json().catch(() => null);
    if (!res.ok) {
      error.textContent = `${data && typeof data.error === "string" ? data.error : res.statusText} (HTTP ${res.status})`;
      error.hidden = false;
      return;
    }
    const value = pick(data, box.dataset.revealField);
    out.value = value == null ? "" : String(value);
    copy.hidden = false;
    button.textContent = "Hide";
    button.dataset.revealed = "";
  } catch (err) {
    error.textContent = `The request did not complete: ${err.message}`;
    error.hidden = false;
  } finally {
    button.disabled = false;
  }
}

document.addEventListener("click", (event) => {
  const button = event.target instanceof Element ? event.target.closest("[data-reveal-button]") : null;
  const box = button?.closest("[data-reveal]");
  if (!button || !box) return;
  if (button.dataset.revealed !== undefined) {
    // hide again: the value leaves the page
    box.querySelector("[data-reveal-out]").value = "";
    box.querySelector("[data-reveal-copy]").hidden = true;
    button.textContent = "Reveal";
    delete button.dataset.revealed;
    return;
  }
  void reveal(box, button);
});
