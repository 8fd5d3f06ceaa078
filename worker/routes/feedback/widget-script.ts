/**
 * The feedback widget (docs/feedback.md) that a pod's vhost injects before `</body>`: served as is
 * at `GET /feedback/widget.js`. Plain ES2017, no dependencies, one closure, nothing global but a
 * guard against loading twice. It reads its token from its own tag's `data-pod-feedback` and the
 * API's base from its own `src`, so the vhost needs to say nothing else.
 *
 * Everything a visitor or the pod's page could have written (comments, names, element text, error
 * messages) reaches the DOM through `textContent` or a property, never as markup; the widget lives
 * in a shadow root so the page's CSS neither hides nor restyles it. Requests carry no credentials.
 *
 * Kept as a string (not a function turned into text): the bundler rewrites functions (helpers such
 * as `__name`) in ways a browser would not run. test/e2e/feedback.test.ts runs it in Chromium.
 */
export const WIDGET_SCRIPT = String.raw`(function () {
  "use strict";
  if (window.__podFeedbackWidget) return;
  var me = document.currentScript || document.querySelector("script[data-pod-feedback]");
  if (!me) return;
  var token = me.getAttribute("data-pod-feedback") || "";
  var suffix = "/feedback/widget.js";
  var src = String(me.src || "").split("?")[0].split("#")[0];
  if (!/^[0-9a-z]{16,64}$/.test(token) || src.slice(-suffix.length) !== suffix) return;
  window.__podFeedbackWidget = true;
  var api = src.slice(0, -suffix.length) + "/api/feedback/" + token;

  var KEY = "pod_feedback_submitter";
  function newId() {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    var out = "v_";
    for (var i = 0; i < bytes.length; i++) out += (bytes[i] + 256).toString(16).slice(1);
    return out;
  }
  var submitter = null;
  try { submitter = localStorage.getItem(KEY); } catch (e) { submitter = null; }
  if (!submitter || !/^[A-Za-z0-9_-]{16,64}$/.test(submitter)) {
    submitter = newId();
    try { localStorage.setItem(KEY, submitter); } catch (e) { /* private mode: this page only */ }
  }

  function el(tag, props, children) {
    var node = document.createElement(tag);
    for (var k in props) if (Object.prototype.hasOwnProperty.call(props, k)) {
      if (k === "text") node.textContent = props[k];
      else if (k === "class") node.className = props[k];
      else node.setAttribute(k, props[k]);
    }
    (children || []).forEach(function (c) { node.appendChild(c); });
    return node;
  }

  var host = el("div", { "data-pod-feedback-widget": "" });
  host.style.cssText = "all: initial; position: static;";
  var root = host.attachShadow({ mode: "open" });
  root.appendChild(el("style", { text: [
    ":host, * { box-sizing: border-box; font: 14px/1.4 system-ui, sans-serif; }",
    ".open { position: fixed; right: 16px; bottom: 16px; z-index: 2147483646; padding: 8px 14px; border: 0; border-radius: 18px; background: #1f6feb; color: #fff; cursor: pointer; box-shadow: 0 2px 8px rgba(0,0,0,.3); }",
    ".panel { position: fixed; right: 16px; bottom: 64px; z-index: 2147483647; width: 320px; max-height: 70vh; overflow: auto; padding: 12px; background: #fff; color: #111; border: 1px solid #ccc; border-radius: 8px; box-shadow: 0 4px 16px rgba(0,0,0,.25); }",
    ".panel[hidden], .hint[hidden], form[hidden] { display: none; }",
    ".hint { pointer-events: none; position: fixed; left: 50%; top: 12px; transform: translateX(-50%); z-index: 2147483647; padding: 6px 12px; background: #111; color: #fff; border-radius: 6px; }",
    "label { display: block; margin: 6px 0 2px; }",
    "input, textarea { width: 100%; padding: 4px 6px; border: 1px solid #aaa; border-radius: 4px; }",
    "textarea { height: 80px; resize: vertical; }",
    ".row { display: flex; gap: 8px; margin-top: 8px; }",
    "button.act { padding: 4px 10px; border: 1px solid #1f6feb; border-radius: 4px; background: #1f6feb; color: #fff; cursor: pointer; }",
    "button.plain { background: #fff; color: #1f6feb; }",
    ".target, .status { margin: 4px 0; color: #555; word-break: break-word; }",
    ".error { color: #b00020; }",
    "ul { list-style: none; margin: 8px 0 0; padding: 0; }",
    "li { padding: 6px 0; border-top: 1px solid #eee; white-space: pre-wrap; word-break: break-word; }",
    "li small { display: block; color: #777; }",
    ".pin { position: absolute; z-index: 2147483645; width: 22px; height: 22px; margin: -11px 0 0 -11px; border-radius: 50%; background: #1f6feb; color: #fff; text-align: center; line-height: 22px; font-size: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.4); }"
  ].join("\n") }));

  var openButton = el("button", { class: "open", type: "button", text: "Feedback" });
  var hint = el("div", { class: "hint", text: "Click the part of the page your comment is about (Esc cancels)" });
  hint.hidden = true;
  var target = el("div", { class: "target" });
  var comment = el("textarea", { name: "comment", maxlength: "5000", required: "" });
  var nameInput = el("input", { name: "name", maxlength: "100", autocomplete: "name" });
  var emailInput = el("input", { name: "email", type: "email", maxlength: "254", autocomplete: "email" });
  var send = el("button", { class: "act", type: "submit", text: "Send" });
  var cancel = el("button", { class: "act plain", type: "button", text: "Cancel" });
  var status = el("div", { class: "status", role: "status" });
  var form = el("form", {}, [
    target,
    el("label", { text: "Comment" }), comment,
    el("label", { text: "Name" }), nameInput,
    el("label", { text: "or email" }), emailInput,
    el("div", { class: "row" }, [send, cancel])
  ]);
  form.hidden = true;
  var pinButton = el("button", { class: "act", type: "button", text: "Pin a comment" });
  var list = el("ul", { class: "mine" });
  var panel = el("div", { class: "panel" }, [pinButton, form, status, el("strong", { text: "Your comments" }), list]);
  panel.hidden = true;
  var pins = el("div", { class: "pins" });
  root.appendChild(openButton);
  root.appendChild(hint);
  root.appendChild(panel);
  root.appendChild(pins);

  var picked = null;
  var mine = [];

  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? "status error" : "status";
  }

  function selectorOf(node) {
    var parts = [];
    while (node && node.nodeType === 1 && node !== document.documentElement && parts.length < 8) {
      if (node.id) { parts.unshift("#" + (window.CSS && CSS.escape ? CSS.escape(node.id) : node.id)); break; }
      var tag = node.tagName.toLowerCase();
      var index = 1;
      for (var sib = node.previousElementSibling; sib; sib = sib.previousElementSibling)
        if (sib.tagName === node.tagName) index++;
      parts.unshift(tag + ":nth-of-type(" + index + ")");
      node = node.parentElement;
    }
    return parts.join(" > ").slice(0, 1000);
  }

  function textOf(node) {
    return String(node.innerText || node.textContent || "").replace(/\s+/g, " ").trim().slice(0, 300);
  }

  function render() {
    while (list.firstChild) list.removeChild(list.firstChild);
    while (pins.firstChild) pins.removeChild(pins.firstChild);
    openButton.textContent = mine.length ? "Feedback (" + mine.length + ")" : "Feedback";
    mine.forEach(function (c, i) {
      list.appendChild(el("li", {}, [
        document.createTextNode(c.comment),
        el("small", { text: c.status + " \u00b7 " + (c.page_path || "/") + (c.element_text ? " \u00b7 " + c.element_text : "") })
      ]));
      if (c.page_path === location.pathname && typeof c.pin_x === "number" && typeof c.pin_y === "number") {
        var pin = el("div", { class: "pin", text: String(mine.length - i) });
        pin.title = c.comment;
        pin.style.left = c.pin_x + "px";
        pin.style.top = c.pin_y + "px";
        pins.appendChild(pin);
      }
    });
  }

  function load() {
    fetch(api + "/mine?submitter=" + encodeURIComponent(submitter), { credentials: "omit" })
      .then(function (res) { return res.ok ? res.json() : { feedback: [] }; })
      .then(function (body) { mine = Array.isArray(body.feedback) ? body.feedback : []; render(); })
      .catch(function () { /* the page works without the widget's list */ });
  }

  function stopPicking() {
    hint.hidden = true;
    document.removeEventListener("click", onPick, true);
    document.removeEventListener("keydown", onKey, true);
  }
  function onKey(event) {
    if (event.key === "Escape") { stopPicking(); panel.hidden = false; }
  }
  function onPick(event) {
    if (event.target === host) return;
    event.preventDefault();
    event.stopPropagation();
    stopPicking();
    var node = event.target;
    picked = {
      page_path: location.pathname.slice(0, 2048),
      pin_selector: selectorOf(node),
      pin_x: Math.round(event.pageX),
      pin_y: Math.round(event.pageY),
      viewport_w: Math.min(window.innerWidth, 100000),
      viewport_h: Math.min(window.innerHeight, 100000),
      element_text: textOf(node)
    };
    target.textContent = picked.element_text ? "On: " + picked.element_text : "On: " + picked.pin_selector;
    form.hidden = false;
    panel.hidden = false;
    say("", false);
    comment.focus();
  }

  openButton.addEventListener("click", function () { panel.hidden = !panel.hidden; });
  pinButton.addEventListener("click", function () {
    panel.hidden = true;
    hint.hidden = false;
    document.addEventListener("click", onPick, true);
    document.addEventListener("keydown", onKey, true);
  });
  cancel.addEventListener("click", function () { form.hidden = true; picked = null; say("", false); });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (!picked) return;
    var body = {
      comment: comment.value,
      submitter_id: submitter
    };
    if (nameInput.value.trim()) body.name = nameInput.value.trim();
    if (emailInput.value.trim()) body.email = emailInput.value.trim();
    for (var k in picked) if (Object.prototype.hasOwnProperty.call(picked, k)) body[k] = picked[k];
    send.disabled = true;
    say("Sending\u2026", false);
    fetch(api, {
      method: "POST",
      credentials: "omit",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body)
    })
      .then(function (res) {
        return res.json().catch(function () { return {}; }).then(function (data) { return { res: res, data: data }; });
      })
      .then(function (r) {
        send.disabled = false;
        if (r.res.status !== 201) {
          say(typeof r.data.error === "string" ? r.data.error : "Could not send (" + r.res.status + ")", true);
          return;
        }
        mine.unshift(r.data);
        render();
        comment.value = "";
        form.hidden = true;
        picked = null;
        say("Thank you: your comment was sent.", false);
      })
      .catch(function () { send.disabled = false; say("Could not send: the service is unreachable.", true); });
  });

  function mount() {
    document.body.appendChild(host);
    load();
  }
  if (document.body) mount();
  else document.addEventListener("DOMContentLoaded", mount);
})();
`;
