// The dashboard's shared script (docs/dashboard.md). Served as a file from the API's origin: the
// pages' Content-Security-Policy allows no inline script. It does four jobs:
// 1. `form[data-api]` sends its fields as JSON to the public API and shows the `{error}` it answers;
// 2. `[data-copy]` buttons copy text;
// 3. `time[datetime]` reads "3 min ago";
// 4. `select[data-submit-on-change]` submits its form.

const FORM_FIELDS = "input[name], select[name], textarea[name]";

/** A field's value as the API wants it: numbers, booleans and JSON where the field says so. */
function fieldValue(el) {
  if (el.type === "checkbox") return el.checked;
  if (el.type === "number") return el.value === "" ? undefined : Number(el.value);
  if (el.dataset.json !== undefined) return el.value === "" ? undefined : JSON.parse(el.value);
  if (el.dataset.lines !== undefined) {
    return el.value
      .split("\n")
      .map((s) => s.trim())
      .filter(Boolean);
  }
  if (el.value === "" && el.dataset.optional !== undefined) return undefined;
  return el.value;
}

/** The form's fields as a JSON object; `a.b` names nest. Fields with `data-path-only` fill the URL only. */
function formBody(form) {
  const body = {};
  for (const el of form.querySelectorAll(FORM_FIELDS)) {
    if (el.disabled || el.dataset.pathOnly !== undefined) continue;
    if (el.type === "radio" && !el.checked) continue;
    const value = fieldValue(el);
    if (value === undefined) continue;
    const keys = el.name.split(".");
    let target = body;
    for (const key of keys.slice(0, -1)) {
      target[key] ??= {};
      target = target[key];
    }
    target[keys[keys.length - 1]] = value;
  }
  return body;
}

/** `{name}` in a template, filled from an object, each value URL-encoded. */
function fill(template, values) {
  return template.replace(/\{([a-z_]+)\}/g, (_, key) => encodeURIComponent(values[key] ?? ""));
}

function fieldsOf(form) {
  const values = {};
  for (const el of form.querySelectorAll(FORM_FIELDS)) values[el.name] = el.value;
  return values;
}

function say(form, selector, text) {
  const el = form.querySelector(`:scope > ${selector}`);
  if (!el) return;
  el.textContent = text;
  el.hidden = !text;
}

async function submitApiForm(form, submitter) {
  const method = form.dataset.method || "POST";
  const url = fill(form.dataset.api, fieldsOf(form));
  if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
  say(form, "[data-error]", "");
  say(form, "[data-status]", "");
  let body;
  try {
    body =
      method === "DELETE" && !form.querySelector(FORM_FIELDS) ? undefined : JSON.stringify(formBody(form));
  } catch (err) {
    say(form, "[data-error]", `Not valid JSON: ${err.message}`);
    return;
  }
  const buttons = form.querySelectorAll("button, input[type=submit]");
  for (const b of buttons) b.disabled = true;
  form.setAttribute("aria-busy", "true");
  try {
    const res = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body,
    });
    const text = await res.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!res.ok) {
      const reason =
        data && typeof data.error === "string" ? data.error : text.slice(0, 300) || res.statusText;
      say(form, "[data-error]", `${reason} (HTTP ${res.status})`);
      return;
    }
    form.dispatchEvent(new CustomEvent("api:done", { bubbles: true, detail: { data, submitter } }));
    if (form.dataset.success) say(form, "[data-status]", form.dataset.success);
    const then = form.dataset.then || "reload";
    if (then === "reload") window.location.reload();
    else if (then.startsWith("go:"))
      window.location.assign(fill(then.slice(3), { ...fieldsOf(form), ...(data || {}) }));
    else if (then.startsWith("refresh:")) {
      const target = document.querySelector(then.slice(8));
      if (target && window.htmx) window.htmx.trigger(target, "refresh");
    } else if (then === "show" || then.startsWith("show:")) {
      // the answer (or one field of it, e.g. a new token shown once) in the form's [data-result]
      const field = then.slice(5);
      const out = form.querySelector("[data-result]");
      if (out) {
        out.textContent = field ? String(data?.[field] ?? "") : JSON.stringify(data, null, 2);
        out.hidden = false;
        out.closest("[data-result-box]")?.removeAttribute("hidden");
      }
    }
  } catch (err) {
    say(form, "[data-error]", `The request did not complete: ${err.message}`);
  } finally {
    for (const b of buttons) b.disabled = false;
    form.removeAttribute("aria-busy");
    for (const input of form.querySelectorAll("[data-must-equal]")) input.dispatchEvent(new Event("input"));
  }
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.api === undefined) return;
  event.preventDefault();
  void submitApiForm(form, event.submitter);
});

// A field that must be typed exactly (a pod's name before deleting it) keeps its form's buttons off until then.
document.addEventListener("input", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || input.dataset.mustEqual === undefined) return;
  const match = input.value === input.dataset.mustEqual;
  for (const b of input.form?.querySelectorAll("button[type=submit]") ?? []) b.disabled = !match;
});

document.addEventListener("change", (event) => {
  const el = event.target;
  if (el instanceof HTMLSelectElement && el.dataset.submitOnChange !== undefined) el.form?.requestSubmit();
});

document.addEventListener("click", async (event) => {
  const button =
    event.target instanceof Element ? event.target.closest("[data-copy], [data-copy-from]") : null;
  if (!button) return;
  const from = button.dataset.copyFrom ? document.querySelector(button.dataset.copyFrom) : null;
  const text = from ? (from.value ?? from.textContent) : button.dataset.copy;
  try {
    await navigator.clipboard.writeText(text);
    const label = button.textContent;
    button.textContent = "Copied";
    setTimeout(() => {
      button.textContent = label;
    }, 1500);
  } catch {
    window.prompt("Copy:", text);
  }
});

const UNITS = [
  ["year", 31536000],
  ["month", 2592000],
  ["day", 86400],
  ["hour", 3600],
  ["minute", 60],
  ["second", 1],
];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

function ago(iso) {
  const seconds = (Date.parse(iso) - Date.now()) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(seconds) >= size || unit === "second")
      return relative.format(Math.round(seconds / size), unit);
  }
  return iso;
}

function humanTimes(root) {
  for (const el of root.querySelectorAll("time[datetime]")) {
    if (el.dataset.exact !== undefined) continue;
    el.textContent = ago(el.getAttribute("datetime"));
  }
}

document.addEventListener("DOMContentLoaded", () => humanTimes(document));
document.addEventListener("htmx:afterSwap", (event) => humanTimes(event.target.parentElement || document));
