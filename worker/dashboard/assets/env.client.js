// The Environment tab (docs/dashboard.md "Environment"). The page holds the variables' names only;
// "Reveal values" fetches GET /api/pods/{name}/env. Edits are made in a table or a raw .env
// textarea; "Review changes" shows what a save will set and remove, and saving calls the same API:
// PUT …/env {vars} for new and changed values, DELETE …/env {keys} for removed names, then
// POST …/restart for "Save and restart the pod". The page reloads after, values hidden again.

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const ESCAPES = { n: "\n", r: "\r", t: "\t", '"': '"', "\\": "\\", $: "$" };

/** A .env text as the pod's loader reads it (agent/inside/dotenv.ts): the last assignment wins. */
function parseDotenv(text) {
  const vars = new Map();
  const errors = [];
  const lines = text.split("\n");
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n];
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) continue;
    const body = trimmed.startsWith("export ") ? trimmed.slice(7).trimStart() : trimmed;
    const eq = body.indexOf("=");
    const key = eq < 0 ? "" : body.slice(0, eq).trim();
    if (!NAME.test(key)) {
      errors.push(`line ${n + 1}: expected NAME=value with a name of letters, digits and _`);
      continue;
    }
    let rest = body.slice(eq + 1).trimStart();
    const q = rest[0];
    if (q === '"' || q === "'" || q === "`") {
      // a quoted value may span lines: read on until its closing quote
      let value = "";
      let i = 1;
      for (;;) {
        while (i < rest.length && rest[i] !== q) {
          let c = rest[i];
          if (q === '"' && c === "\\" && i + 1 < rest.length) {
            i += 1;
            c = ESCAPES[rest[i]] ?? `\\${rest[i]}`;
          }
          value += c;
          i += 1;
        }
        if (i < rest.length || n + 1 >= lines.length) break;
        n += 1;
        value += "\n";
        rest = `${rest.slice(0, i)}\n${lines[n]}`;
        i += 1;
      }
      vars.set(key, value);
    } else {
      const hash = rest.search(/[ \t]#/);
      vars.set(key, (hash < 0 ? rest : rest.slice(0, hash)).trim());
    }
  }
  return { vars, errors };
}

/** One line of .env, double-quoted with escapes so any value reads back exactly. */
function dotenvLine(key, value) {
  const escaped = value.replace(/[\\"\n\r\t]/g, (c) =>
    c === "\n" ? "\\n" : c === "\r" ? "\\r" : c === "\t" ? "\\t" : `\\${c}`,
  );
  return `${key}="${escaped}"`;
}

function setup(root) {
  const api = root.dataset.env;
  const restartUrl = root.dataset.restart;
  const originalNames = JSON.parse(root.dataset.keys || "[]");
  /** the file's values once revealed; null until then */
  let original = null;
  let mode = "table";
  let pending = null;

  const $ = (sel) => root.querySelector(sel);
  const rows = $("[data-env-rows]");
  const raw = $("[data-env-raw]");
  const diffBox = $("[data-env-diff-box]");
  const diffOut = $("[data-env-diff]");
  const revealButton = $("[data-env-reveal]");

  function say(sel, text) {
    const el = $(sel);
    el.textContent = text;
    el.hidden = !text;
  }

  async function api_(method, url, body) {
    const res = await fetch(url, {
      method,
      credentials: "same-origin",
      headers: body === undefined ? {} : { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
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
      throw new Error(`${reason} (HTTP ${res.status})`);
    }
    return data;
  }

  async function reveal() {
    if (original) return true;
    revealButton.disabled = true;
    say("[data-env-error]", "");
    try {
      const data = await api_("GET", api);
      original = new Map(Object.entries(data.vars));
      for (const row of rows.querySelectorAll("[data-env-row][data-original]")) {
        const value = row.querySelector("[data-env-value]");
        value.value = original.get(row.dataset.original) ?? "";
        value.type = "text";
        value.disabled = false;
        value.placeholder = "";
      }
      // a name another client added since the page was rendered gets its row too
      for (const [key, value] of original) {
        if (!originalNames.includes(key)) addRow(key, value, key);
      }
      revealButton.textContent = "Values revealed";
      return true;
    } catch (err) {
      say("[data-env-error]", `The values could not be read: ${err.message}`);
      revealButton.disabled = false;
      return false;
    }
  }

  function addRow(key = "", value = "", originalName) {
    const tr = document.createElement("tr");
    tr.dataset.envRow = "";
    if (originalName) tr.dataset.original = originalName;
    const keyInput = Object.assign(document.createElement("input"), {
      className: "env-key",
      value: key,
      autocomplete: "off",
      placeholder: "NAME",
    });
    keyInput.dataset.envKey = "";
    keyInput.setAttribute("aria-label", "Variable name");
    if (originalName) keyInput.readOnly = true;
    const valueInput = Object.assign(document.createElement("input"), {
      className: "env-value",
      value,
      autocomplete: "off",
    });
    valueInput.dataset.envValue = "";
    valueInput.setAttribute("aria-label", "Value");
    const remove = Object.assign(document.createElement("button"), {
      type: "button",
      className: "small",
      textContent: "Remove",
    });
    remove.dataset.envRemove = "";
    remove.setAttribute("aria-label", "Remove this variable");
    for (const child of [keyInput, valueInput, remove]) {
      const td = document.createElement("td");
      td.append(child);
      tr.append(td);
    }
    rows.append(tr);
    $("[data-env-empty]")?.remove();
    return keyInput;
  }

  /** The variables as the editor now has them: name → value (undefined: kept, not revealed). */
  function current() {
    if (mode === "raw") {
      const parsed = parseDotenv(raw.value);
      if (parsed.errors.length) throw new Error(parsed.errors.join("; "));
      return parsed.vars;
    }
    const vars = new Map();
    for (const row of rows.querySelectorAll("[data-env-row]")) {
      const key = row.querySelector("[data-env-key]").value.trim();
      const valueInput = row.querySelector("[data-env-value]");
      if (key === "" && valueInput.value === "") continue;
      if (!NAME.test(key))
        throw new Error(`${key || "(empty)"}: a name is letters, digits and _, not starting with a digit`);
      if (vars.has(key)) throw new Error(`${key} is there twice`);
      vars.set(key, valueInput.disabled ? undefined : valueInput.value);
    }
    return vars;
  }

  function changes() {
    const next = current();
    const set = {};
    const lines = [];
    for (const [key, value] of next) {
      const known = originalNames.includes(key) || original?.has(key);
      if (value === undefined) continue;
      if (!known) {
        set[key] = value;
        lines.push(`+ ${key} (new)`);
      } else if (original && original.get(key) !== value) {
        set[key] = value;
        lines.push(`~ ${key} (new value)`);
      }
    }
    const names = new Set([...originalNames, ...(original ? original.keys() : [])]);
    const removed = [...names].filter((key) => !next.has(key));
    for (const key of removed) lines.push(`- ${key} (removed)`);
    return { set, removed, lines };
  }

  function review() {
    say("[data-env-error]", "");
    say("[data-env-status]", "");
    try {
      pending = changes();
    } catch (err) {
      pending = null;
      diffBox.hidden = true;
      say("[data-env-error]", err.message);
      return;
    }
    diffOut.textContent = pending.lines.length ? pending.lines.join("\n") : "Nothing changes.";
    for (const b of root.querySelectorAll("[data-env-save]")) b.disabled = pending.lines.length === 0;
    diffBox.hidden = false;
  }

  async function save(restart) {
    if (!pending) return;
    const buttons = root.querySelectorAll("button");
    for (const b of buttons) b.disabled = true;
    root.setAttribute("aria-busy", "true");
    say("[data-env-error]", "");
    try {
      if (Object.keys(pending.set).length) await api_("PUT", api, { vars: pending.set });
      if (pending.removed.length) await api_("DELETE", api, { keys: pending.removed });
      if (restart) {
        say("[data-env-status]", "Saved; restarting the pod…");
        await api_("POST", restartUrl);
      }
      say("[data-env-status]", restart ? "Saved and restarted." : "Saved.");
      root.dataset.saved = restart ? "restarted" : "saved";
      setTimeout(() => window.location.reload(), 800);
    } catch (err) {
      say("[data-env-error]", err.message);
      for (const b of buttons) b.disabled = false;
    } finally {
      root.removeAttribute("aria-busy");
    }
  }

  async function switchMode(next) {
    if (next === mode) return;
    say("[data-env-error]", "");
    if (next === "raw") {
      if (!(await reveal())) return;
      let vars;
      try {
        vars = current();
      } catch (err) {
        say("[data-env-error]", err.message);
        return;
      }
      raw.value = [...vars].map(([k, v]) => dotenvLine(k, v ?? "")).join("\n") + (vars.size ? "\n" : "");
    } else {
      const parsed = parseDotenv(raw.value);
      if (parsed.errors.length) {
        say("[data-env-error]", parsed.errors.join("; "));
        return;
      }
      rows.replaceChildren();
      for (const [key, value] of parsed.vars) {
        const known = originalNames.includes(key) || original?.has(key);
        addRow(key, value, known ? key : undefined);
      }
    }
    mode = next;
    $("[data-env-table-box]").hidden = mode !== "table";
    $("[data-env-raw-box]").hidden = mode !== "raw";
    for (const b of root.querySelectorAll("[data-env-mode]"))
      b.setAttribute("aria-pressed", String(b.dataset.envMode === mode));
    diffBox.hidden = true;
  }

  root.addEventListener("click", (event) => {
    const button = event.target instanceof Element ? event.target.closest("button") : null;
    if (!button || !root.contains(button)) return;
    if (button.dataset.envReveal !== undefined) void reveal();
    else if (button.dataset.envAdd !== undefined) addRow().focus();
    else if (button.dataset.envRemove !== undefined) {
      button.closest("tr")?.remove();
      diffBox.hidden = true;
    } else if (button.dataset.envMode) void switchMode(button.dataset.envMode);
    else if (button.dataset.envReview !== undefined) review();
    else if (button.dataset.envSave) void save(button.dataset.envSave === "restart");
  });
  root.addEventListener("input", () => {
    diffBox.hidden = true;
    pending = null;
  });
}

for (const root of document.querySelectorAll("[data-env]")) setup(root);
