// The script of a pod's Deploys, Databases and Backups tabs (docs/dashboard.md). It calls only the
// public API, as the forms do. Four jobs:
// 1. `button[data-reveal-from]` fetches a secret from the API when pressed and fills the page's
//    `[data-secret-field]` slots and `[data-template]` lines (a connection string) with it;
// 2. `button[data-branches]` asks GET /api/repos/branches for the repository typed in the form and
//    fills the branch field's list;
// 3. `pre[data-log-url]` streams a running deployment's build log into the page until it ends;
// 4. `form[data-upload]` sends a file as multipart with XMLHttpRequest, showing its upload progress.

/** A JSON answer of the API, or an Error carrying its `{error}` and status. */
async function apiJson(url) {
  const res = await fetch(url, { credentials: "same-origin", headers: { accept: "application/json" } });
  const text = await res.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const reason = data && typeof data.error === "string" ? data.error : res.statusText;
    throw new Error(`${reason} (HTTP ${res.status})`);
  }
  return data;
}

/** `{name}` in a template filled from an object; `{name|url}` URL-encodes the value. */
function fillTemplate(template, values) {
  return template.replace(/\{([a-z_]+)(\|url)?\}/g, (_, key, url) => {
    const value = values[key] === undefined || values[key] === null ? "" : String(values[key]);
    return url ? encodeURIComponent(value) : value;
  });
}

function showError(scope, message) {
  const out = scope.querySelector("[data-reveal-error]");
  if (!out) return;
  out.textContent = message;
  out.hidden = !message;
}

// 1. Reveal: the secret is in no page until this button is pressed.
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-reveal-from]") : null;
  if (!button) return;
  const scope = button.closest("[data-reveal-scope]") || document;
  showError(scope, "");
  button.disabled = true;
  try {
    const data = await apiJson(button.dataset.revealFrom);
    for (const slot of scope.querySelectorAll("[data-secret-field]")) {
      slot.textContent = String(data[slot.dataset.secretField] ?? "");
      slot.classList.remove("masked");
    }
    for (const line of scope.querySelectorAll("[data-template]")) {
      line.textContent = fillTemplate(line.dataset.template, data);
    }
    for (const hidden of scope.querySelectorAll("[data-after-reveal]")) hidden.hidden = false;
    button.hidden = true;
  } catch (err) {
    showError(scope, err.message);
    button.disabled = false;
  }
});

// 2. The branch picker.
document.addEventListener("click", async (event) => {
  const button = event.target instanceof Element ? event.target.closest("button[data-branches]") : null;
  if (!button?.form) return;
  const form = button.form;
  const repo = form.querySelector("[name=repo_url]")?.value.trim() ?? "";
  const token = form.querySelector("[name=auth_token]")?.value ?? "";
  const list = document.getElementById(button.dataset.branches);
  const branch = form.querySelector("[name=branch]");
  const status = form.querySelector("[data-branches-status]");
  const say = (text) => {
    if (status) status.textContent = text;
  };
  if (!repo) {
    say("Type the repository's URL first.");
    return;
  }
  const query = new URLSearchParams({ repo_url: repo });
  if (token) query.set("auth_token", token);
  button.disabled = true;
  say("Asking the repository…");
  try {
    const data = await apiJson(`/api/repos/branches?${query}`);
    list.replaceChildren(
      ...data.branches.map((name) => {
        const option = document.createElement("option");
        option.value = name;
        return option;
      }),
    );
    if (branch && data.default_branch && (!branch.value || !data.branches.includes(branch.value)))
      branch.value = data.default_branch;
    say(
      `${data.branches.length} branch${data.branches.length === 1 ? "" : "es"}; default ${data.default_branch ?? "none"}.`,
    );
  } catch (err) {
    say(err.message);
  } finally {
    button.disabled = false;
  }
});

// 3. A running deployment's build log, streamed (the API ends the stream when the deployment ends;
// after its 15-minute cap, or a dropped connection, it is asked again from the start).
const LOG_MAX_CHARS = 2 * 1024 * 1024;

async function streamLog(pre) {
  const status = document.getElementById(pre.dataset.logStatus || "");
  const say = (text) => {
    if (status) status.textContent = text;
  };
  for (let attempt = 0; attempt < 20; attempt++) {
    let text = "";
    try {
      const res = await fetch(pre.dataset.logUrl, { credentials: "same-origin" });
      if (!res.ok || !res.body) {
        say(`The build log could not be read (HTTP ${res.status}).`);
        return;
      }
      say("Streaming the build log…");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        text += value;
        // bounded: the API caps a log at 1 MiB, this is a second fence
        if (text.length > LOG_MAX_CHARS) text = text.slice(-LOG_MAX_CHARS);
        const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 24;
        pre.textContent = text;
        if (atBottom) pre.scrollTop = pre.scrollHeight;
      }
    } catch {
      // a dropped connection: read the deployment's state and ask again
    }
    let deployment = null;
    try {
      deployment = await apiJson(pre.dataset.deploymentUrl);
    } catch {
      deployment = null;
    }
    if (deployment && deployment.status !== "deploying") {
      pre.textContent = deployment.build_log || text;
      pre.dataset.finished = deployment.status;
      say(`Finished: ${deployment.status.replace("_", " ")}.`);
      const rows = document.querySelector(pre.dataset.refresh || "");
      if (rows && window.htmx) window.htmx.trigger(rows, "refresh");
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// 4. An upload with a progress bar: fetch() cannot report upload progress, XMLHttpRequest can.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || form.dataset.upload === undefined) return;
  event.preventDefault();
  const bar = form.querySelector("progress");
  const status = form.querySelector("[data-upload-status]");
  const error = form.querySelector("[data-upload-error]");
  const button = form.querySelector("button[type=submit]");
  const say = (el, text) => {
    if (!el) return;
    el.textContent = text;
    el.hidden = !text;
  };
  say(error, "");
  const xhr = new XMLHttpRequest();
  xhr.open("POST", form.dataset.upload);
  xhr.responseType = "text";
  xhr.upload.addEventListener("progress", (e) => {
    if (!e.lengthComputable || !bar) return;
    bar.max = e.total;
    bar.value = e.loaded;
    say(status, `Uploading… ${Math.floor((e.loaded / e.total) * 100)}%`);
  });
  xhr.addEventListener("load", () => {
    if (button) button.disabled = false;
    if (xhr.status >= 200 && xhr.status < 300) {
      say(status, "Uploaded; checking the archive on the pod's host.");
      window.location.reload();
      return;
    }
    let reason = xhr.statusText;
    try {
      reason = JSON.parse(xhr.responseText).error || reason;
    } catch {
      // not JSON: keep the status text
    }
    say(status, "");
    say(error, `${reason} (HTTP ${xhr.status})`);
  });
  xhr.addEventListener("error", () => {
    if (button) button.disabled = false;
    say(error, "The upload did not complete.");
  });
  if (bar) {
    bar.hidden = false;
    bar.value = 0;
  }
  if (button) button.disabled = true;
  say(status, "Uploading…");
  const body = new FormData(form);
  for (const [key, value] of [...body.entries()]) if (value === "") body.delete(key);
  xhr.send(body);
});

document.addEventListener("DOMContentLoaded", () => {
  for (const pre of document.querySelectorAll("pre[data-log-url]")) void streamLog(pre);
});
