// The new pod page (/app/new, docs/dashboard.md "New pod"). Every step is a call of the public API,
// the one the page's curl lines show:
// - an empty pod: POST /api/pods;
// - a ZIP: POST /api/pods/from-zip (multipart), sent with XMLHttpRequest so the bar follows the bytes;
// - a repository: GET /api/repos/branches fills the branch picker, then POST /api/pods/from-repo;
// - an import: POST /api/imports with dry_run first (the files it would make), then without.
// Once the API answers 202, the new pod's progress (/app/new/progress/{name}) replaces itself every
// second until the pod runs or fails. Text from the API or a remote page only ever goes into
// textContent, never into markup.

const form = document.querySelector("form[data-new-pod]");

const $ = (selector) => form.querySelector(selector);

function say(selector, text) {
  const el = $(selector);
  if (!el) return;
  el.textContent = text;
  el.hidden = !text;
}

/** The `{error}` of a failed API answer, with its status, as the other forms show it. */
function reasonOf(status, text) {
  try {
    const data = JSON.parse(text);
    if (data && typeof data.error === "string") return `${data.error} (HTTP ${status})`;
  } catch {
    // not JSON: the text itself
  }
  return `${text.slice(0, 300) || "the request failed"} (HTTP ${status})`;
}

async function api(method, url, body) {
  const res = await fetch(url, {
    method,
    credentials: "same-origin",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(reasonOf(res.status, text));
  return text ? JSON.parse(text) : null;
}

const source = () => form.querySelector("input[name=source]:checked")?.value ?? "empty";

/** The pod's own fields (name, preset, plan, region) as the API wants them; empty ones left out. */
function podFields() {
  const fields = {};
  const name = $("input[name=name]").value.trim();
  if (name) fields.name = name;
  const preset = $("select[name=preset]");
  if (preset.value && !preset.disabled) fields.preset = preset.value;
  fields.plan_slug = form.querySelector("input[name=plan_slug]:checked")?.value ?? "launch";
  const region = $("select[name=region]").value;
  if (region) fields.region = region;
  return fields;
}

// --- the source picker ---------------------------------------------------------------------

function showSource() {
  const current = source();
  for (const panel of form.querySelectorAll("[data-source-panel]")) {
    panel.hidden = panel.dataset.sourcePanel !== current;
  }
  const name = $("input[name=name]");
  name.required = current === "empty";
  const preset = $("select[name=preset]");
  const detect = preset.querySelector("[data-detect]");
  // an empty pod needs a preset; the others detect it; an import always does (no preset field)
  detect.disabled = current === "empty";
  if (current === "empty" && preset.value === "") preset.value = "static";
  $("[data-preset-field]").hidden = current === "import";
  preset.disabled = current === "import";
  updateCreate();
}

form.addEventListener("change", (event) => {
  if (event.target instanceof HTMLInputElement && event.target.name === "source") showSource();
});

// --- ZIP: drag and drop or the file picker, then an upload with progress -----------------------

let zipFile = null;
const zone = $("[data-drop-zone]");
const zipInput = $("[data-zip-input]");

function chooseZip(file) {
  zipFile = file ?? null;
  const size = file ? `${(file.size / 1024 / 1024).toFixed(1)} MiB` : "";
  $("[data-zip-chosen]").textContent = file ? `${file.name} (${size})` : "No file chosen.";
  updateCreate();
}

zipInput.addEventListener("change", () => chooseZip(zipInput.files?.[0]));
zone.addEventListener("dragover", (event) => {
  event.preventDefault();
  zone.classList.add("over");
});
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", (event) => {
  event.preventDefault();
  zone.classList.remove("over");
  chooseZip(event.dataTransfer?.files?.[0]);
});

function uploadZip(fields) {
  const box = $("[data-upload-progress]");
  const bar = $("[data-upload-bar]");
  const status = $("[data-upload-status]");
  box.hidden = false;
  bar.value = 0;
  $("[data-upload-label]").textContent = `Uploading ${zipFile.name}`;
  return new Promise((resolve, reject) => {
    const body = new FormData();
    // the fields first: the API streams the archive to storage as it arrives
    for (const [key, value] of Object.entries(fields)) body.append(key, value);
    body.append("zip", zipFile, zipFile.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", "/api/pods/from-zip");
    xhr.withCredentials = true;
    xhr.upload.addEventListener("progress", (event) => {
      if (!event.lengthComputable) return;
      const percent = Math.floor((event.loaded / event.total) * 100);
      bar.value = percent;
      status.textContent = `${percent} % sent`;
    });
    xhr.upload.addEventListener("load", () => {
      bar.value = 100;
      status.textContent = "100 % sent; unpacking…";
    });
    xhr.addEventListener("load", () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        bar.value = 100;
        status.textContent = "100 % uploaded";
        resolve(JSON.parse(xhr.responseText));
      } else {
        status.textContent = "";
        reject(new Error(reasonOf(xhr.status, xhr.responseText)));
      }
    });
    xhr.addEventListener("error", () => reject(new Error("the upload did not complete")));
    xhr.send(body);
  });
}

// --- a repository: its branches, then the pod ---------------------------------------------------

const branchSelect = $("[data-branch]");

$("[data-load-branches]").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  const repoUrl = $("input[name=repo_url]").value.trim();
  say("[data-repo-error]", "");
  if (!repoUrl) {
    say("[data-repo-error]", "Enter the repository's URL first.");
    return;
  }
  const query = new URLSearchParams({ repo_url: repoUrl });
  const token = $("input[name=auth_token]").value;
  if (token) query.set("auth_token", token);
  button.disabled = true;
  button.textContent = "Loading branches…";
  try {
    const { branches, default_branch } = await api("GET", `/api/repos/branches?${query}`);
    branchSelect.replaceChildren(
      ...branches.map((b) => {
        const option = document.createElement("option");
        option.value = b;
        option.textContent = b === default_branch ? `${b} (default)` : b;
        option.selected = b === default_branch;
        return option;
      }),
    );
    branchSelect.disabled = branches.length === 0;
    if (branches.length === 0) say("[data-repo-error]", "The repository has no branches yet.");
  } catch (err) {
    say("[data-repo-error]", err.message);
  } finally {
    button.disabled = false;
    button.textContent = "Load branches";
    updateCreate();
  }
});

$("input[name=repo_url]").addEventListener("input", () => {
  branchSelect.disabled = true;
  branchSelect.replaceChildren(new Option("Load the branches first", ""));
  updateCreate();
});

// --- an import: the dry run's files first, then the import itself -----------------------------

let previewed = null;

function importRequest() {
  const url = $("input[name=import_url]").value.trim();
  const paste = $("textarea[name=import_paste]").value;
  if (url && paste.trim()) throw new Error("Give a URL or pasted code, not both.");
  if (url) return { url };
  if (paste.trim()) return { paste: { body: paste } };
  throw new Error("Enter a URL or paste some code first.");
}

const sizeOf = (bytes) =>
  bytes < 1024
    ? `${bytes} B`
    : bytes < 1048576
      ? `${(bytes / 1024).toFixed(1)} KB`
      : `${(bytes / 1048576).toFixed(1)} MB`;

function showPreview(artifact) {
  const box = $("[data-import-result]");
  $("[data-import-title]").textContent = artifact.title || artifact.slug;
  $("[data-import-summary]").textContent =
    `${artifact.files.length} file${artifact.files.length === 1 ? "" : "s"} · ${artifact.type} · preset ${artifact.preset} · from ${artifact.source}`;
  $("[data-import-files]").replaceChildren(
    ...artifact.files.map((file) => {
      const row = document.createElement("tr");
      const path = document.createElement("td");
      path.textContent = file.path;
      const size = document.createElement("td");
      size.textContent = sizeOf(file.size);
      row.append(path, size);
      return row;
    }),
  );
  box.hidden = false;
}

$("[data-import-preview]").addEventListener("click", async (event) => {
  const button = event.currentTarget;
  say("[data-import-error]", "");
  let request;
  try {
    request = importRequest();
  } catch (err) {
    say("[data-import-error]", err.message);
    return;
  }
  button.disabled = true;
  button.textContent = "Reading…";
  try {
    const { artifact } = await api("POST", "/api/imports", { ...request, dry_run: true });
    previewed = JSON.stringify(request);
    showPreview(artifact);
  } catch (err) {
    previewed = null;
    $("[data-import-result]").hidden = true;
    say("[data-import-error]", err.message);
  } finally {
    button.disabled = false;
    button.textContent = "Preview the files";
    updateCreate();
  }
});

for (const field of [$("input[name=import_url]"), $("textarea[name=import_paste]")]) {
  field.addEventListener("input", () => {
    previewed = null;
    $("[data-import-result]").hidden = true;
    updateCreate();
  });
}

// --- create -----------------------------------------------------------------------------------

const createButton = $("[data-create]");

/** Create stays off until the source has what it needs: a file, a branch, a previewed import. */
function updateCreate() {
  const current = source();
  const ready =
    current === "empty" ||
    (current === "zip" && zipFile !== null) ||
    (current === "repo" && !branchSelect.disabled && branchSelect.value !== "") ||
    (current === "import" && previewed !== null);
  createButton.disabled = !ready;
  createButton.title = ready
    ? ""
    : { zip: "Choose a .zip first", repo: "Load the branches first", import: "Preview the files first" }[
        current
      ] || "";
}

async function create() {
  const fields = podFields();
  switch (source()) {
    case "zip":
      return uploadZip(fields);
    case "repo": {
      const body = {
        ...fields,
        repo_url: $("input[name=repo_url]").value.trim(),
        branch: branchSelect.value,
      };
      const token = $("input[name=auth_token]").value;
      if (token) body.auth_token = token;
      return api("POST", "/api/pods/from-repo", body);
    }
    case "import":
      return api("POST", "/api/imports", { ...fields, ...importRequest() });
    default:
      return api("POST", "/api/pods", fields);
  }
}

function followProgress(name) {
  const url = `/app/new/progress/${encodeURIComponent(name)}`;
  window.htmx.ajax("GET", url, { target: "#new-pod-progress", swap: "outerHTML" });
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  say("[data-error]", "");
  say("[data-status]", "");
  const name = $("input[name=name]");
  if (!name.checkValidity()) {
    say(
      "[data-error]",
      name.validity.valueMissing
        ? "Give the pod a name."
        : "The name must be 3–40 of a–z, 0–9 and -, starting with a letter.",
    );
    name.focus();
    return;
  }
  createButton.disabled = true;
  form.setAttribute("aria-busy", "true");
  try {
    const data = await create();
    const pod = data.pod ?? data;
    say("[data-status]", `Accepted: ${pod.name} is being created.`);
    for (const fieldset of form.querySelectorAll("fieldset")) fieldset.disabled = true;
    for (const button of form.querySelectorAll("button")) button.disabled = true;
    followProgress(pod.name);
  } catch (err) {
    say("[data-error]", err.message);
    updateCreate();
  } finally {
    form.removeAttribute("aria-busy");
  }
});

showSource();
