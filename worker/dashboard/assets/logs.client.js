// The Logs tab (pages/pod/logs.tsx): a live tail of the API's follow mode (server-sent events) in a
// ring buffer. Lines arriving at any rate are queued and drawn once a frame (at most PER_FRAME, in one fragment); the
// page keeps at most KEEP lines (what Download saves) and at most SHOWN line elements, so 10,000
// lines in a second cost a few frames, never a frozen page.
(() => {
  const view = document.querySelector(".logs-view");
  if (!view) return;
  const KEEP = 20_000;
  const SHOWN = 2_000;
  const PER_FRAME = 250;
  const box = view.querySelector("[data-logs-lines]");
  const status = view.querySelector("[data-logs-status]");
  const pauseButton = view.querySelector("[data-logs-pause]");
  const url = view.getAttribute("data-logs-stream");

  /** every line kept, oldest first: a ring of KEEP */
  const ring = new Array(KEEP);
  let start = 0;
  let count = 0;
  /** lines not drawn yet */
  let pending = [];
  let paused = false;
  let frame = 0;

  const push = (lines) => {
    for (const line of lines) {
      ring[(start + count) % KEEP] = line;
      if (count < KEEP) count++;
      else start = (start + 1) % KEEP;
    }
    pending.push(...lines);
    // more than a screenful waiting: only the newest SHOWN can end up on the page
    if (pending.length > SHOWN) pending = pending.slice(-SHOWN);
    if (!paused && !frame) frame = requestAnimationFrame(draw);
  };

  const draw = () => {
    frame = 0;
    if (paused || pending.length === 0) return;
    const atBottom = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    // at most PER_FRAME lines a frame: a burst is drawn over a few frames, each one short
    const now = pending.length > PER_FRAME ? pending.slice(0, PER_FRAME) : pending;
    pending = pending.length > PER_FRAME ? pending.slice(PER_FRAME) : [];
    const fragment = document.createDocumentFragment();
    for (const line of now) {
      const div = document.createElement("div");
      div.textContent = line;
      fragment.append(div);
    }
    box.append(fragment);
    const extra = box.childElementCount - SHOWN;
    if (extra > 0) {
      const range = document.createRange();
      range.setStartBefore(box.firstElementChild);
      range.setEndAfter(box.children[extra - 1]);
      range.deleteContents();
    }
    if (atBottom) box.scrollTop = box.scrollHeight;
    if (pending.length > 0) frame = requestAnimationFrame(draw);
  };

  const say = (text) => {
    status.textContent = text;
  };

  const initial = document.getElementById("logs-initial");
  if (initial) push(JSON.parse(initial.textContent || "[]"));

  view.querySelector("[data-logs-download]").addEventListener("click", () => {
    const lines = [];
    for (let i = 0; i < count; i++) lines.push(ring[(start + i) % KEEP]);
    const blob = new Blob([lines.length ? `${lines.join("\n")}\n` : ""], { type: "text/plain" });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = view.getAttribute("data-logs-name") || "log.txt";
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  });

  view.querySelector("[data-logs-clear]").addEventListener("click", () => {
    start = 0;
    count = 0;
    pending = [];
    box.replaceChildren();
  });

  if (!url) return;

  pauseButton.addEventListener("click", () => {
    paused = !paused;
    pauseButton.setAttribute("aria-pressed", String(paused));
    pauseButton.textContent = paused ? "Resume" : "Pause";
    say(paused ? "Paused: new lines are kept and shown on Resume." : "Live.");
    if (!paused && !frame) frame = requestAnimationFrame(draw);
  });

  // The first event of every connection is the log's last lines: taken on the first connection,
  // dropped on a reconnection (they are on the page already).
  let connections = 0;
  let first = true;
  let source;
  const connect = () => {
    source = new EventSource(url);
    first = true;
    source.addEventListener("open", () => {
      connections++;
      if (!paused) say("Live.");
    });
    source.addEventListener("message", (e) => {
      const { lines } = JSON.parse(e.data);
      if (first) {
        first = false;
        if (connections > 1) return;
      }
      push(lines);
    });
    source.addEventListener("end", (e) => {
      source.close();
      let reason = "the stream ended";
      try {
        reason = JSON.parse(e.data).reason;
      } catch {}
      say(`Stopped: ${reason}. Reconnecting in 5 s…`);
      setTimeout(connect, 5_000);
    });
    source.addEventListener("error", () => {
      say("Connection lost; reconnecting…");
    });
  };
  connect();
})();
