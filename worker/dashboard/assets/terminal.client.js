// The Terminal tab (docs/dashboard.md "Terminal"): xterm.js on the API's WebSocket
// `GET /api/pods/{name}/terminal`. Binary frames are the terminal's bytes both ways; text frames are
// JSON: `resize` and `ack` from here, `exit` and `error` from the server. Output is acknowledged once
// xterm has drawn it, which is what paces the host (it sends at most 256 KiB not yet acknowledged):
// a `yes` flood runs as fast as this page draws, never faster, and never freezes it.
(() => {
  const screen = document.getElementById("terminal");
  const status = document.getElementById("terminal-status");
  const again = document.getElementById("terminal-reconnect");
  if (!screen || !status || !again || !window.Terminal || !window.FitAddon) return;

  /** the largest ack the server takes in one message, and the largest keystroke frame it takes */
  const ACK_MAX = 256 * 1024;
  const FRAME_MAX = 16 * 1024;
  const colsMax = Number(screen.dataset.colsMax) || 1000;
  const rowsMax = Number(screen.dataset.rowsMax) || 500;

  const term = new window.Terminal({
    cursorBlink: true,
    scrollback: 5000,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace',
    fontSize: 14,
  });
  const fit = new window.FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open(screen);
  const fitNow = () => {
    try {
      fit.fit();
    } catch {
      // not laid out yet (a hidden tab): the next resize fits it
    }
  };
  fitNow();

  const encoder = new TextEncoder();
  /** @type {WebSocket | null} */
  let socket = null;

  const say = (text, state) => {
    status.textContent = text;
    status.dataset.state = state;
  };

  const size = () => ({
    cols: Math.min(Math.max(term.cols, 2), colsMax),
    rows: Math.min(Math.max(term.rows, 1), rowsMax),
  });

  const sendText = (message) => {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(message));
  };

  const sendBytes = (bytes) => {
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    for (let at = 0; at < bytes.length; at += FRAME_MAX) socket.send(bytes.subarray(at, at + FRAME_MAX));
  };

  function connect() {
    if (socket && socket.readyState <= WebSocket.OPEN) return;
    const { cols, rows } = size();
    const url = new URL(`${screen.dataset.terminalPath}?cols=${cols}&rows=${rows}`, window.location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    socket = ws;
    let opened = false;
    /** why the server ended the session, when it said so */
    let told = null;
    let drawn = 0;
    let ackQueued = false;
    const acknowledge = (bytes) => {
      drawn += bytes;
      if (ackQueued) return;
      ackQueued = true;
      setTimeout(() => {
        ackQueued = false;
        while (drawn > 0) {
          const n = Math.min(drawn, ACK_MAX);
          drawn -= n;
          if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "ack", bytes: n }));
        }
      }, 0);
    };

    say("Connecting…", "connecting");
    again.hidden = true;
    ws.addEventListener("open", () => {
      opened = true;
      say("Connected.", "open");
      term.focus();
    });
    ws.addEventListener("message", (event) => {
      if (typeof event.data === "string") {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch {
          return;
        }
        if (message.type === "exit") told = `The shell exited (status ${message.code}).`;
        else if (message.type === "error") told = `${message.error}`;
        return;
      }
      const bytes = new Uint8Array(event.data);
      term.write(bytes, () => acknowledge(bytes.length));
    });
    ws.addEventListener("close", (event) => {
      if (socket === ws) socket = null;
      let text = told;
      if (!text && !opened)
        text = "The terminal could not be opened (signed out, or the server cannot be reached).";
      if (!text) text = `The session ended${event.reason ? `: ${event.reason}` : ""}.`;
      say(text, "ended");
      again.hidden = false;
    });
  }

  term.onData((data) => sendBytes(encoder.encode(data)));
  term.onBinary((data) => sendBytes(Uint8Array.from(data, (c) => c.charCodeAt(0) & 0xff)));
  // the size the pty has, also on the box for whoever looks (`stty size` prints "rows cols")
  const showSize = () => {
    const { cols, rows } = size();
    screen.dataset.size = `${rows} ${cols}`;
  };
  showSize();
  term.onResize(() => {
    showSize();
    sendText({ type: "resize", ...size() });
  });

  // The terminal follows its box (the window, a rotated phone): refit once per frame at most.
  let fitQueued = false;
  new ResizeObserver(() => {
    if (fitQueued) return;
    fitQueued = true;
    requestAnimationFrame(() => {
      fitQueued = false;
      fitNow();
    });
  }).observe(screen);

  again.addEventListener("click", () => {
    term.reset();
    connect();
  });
  if (screen.dataset.autostart === "true") connect();
  else again.hidden = false;
})();
