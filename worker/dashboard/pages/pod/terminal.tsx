import { MAX_TERMINALS_PER_POD, TERMINAL_COLS, TERMINAL_ROWS } from "../../../../shared/protocol/terminal";
import type { PodView } from "../../../services/pods/view";
import { Curl } from "../../components/curl";
import { PodPage } from "../../components/pod-page";
import type { PageContext } from "../../layout";

/**
 * The Terminal tab: a shell in the pod as pod_user, drawn by xterm.js. terminal.client.js opens the
 * API's WebSocket (`GET /api/pods/{name}/terminal`, docs/dashboard.md "Terminal") with the page's
 * size, sends keystrokes and resizes, acknowledges the output it has drawn, and says in words when
 * the session ends or is refused, with a button to open a new one.
 */
export function TerminalPage({ page, pod }: { page: PageContext; pod: PodView }) {
  const path = `/api/pods/${encodeURIComponent(pod.name)}/terminal`;
  const running = pod.status === "running";
  return (
    <PodPage
      page={page}
      pod={pod}
      tab="terminal"
      scripts={["xterm.js", "xterm-fit.js", "terminal.js"]}
      styles={["xterm.css"]}
    >
      <section class="terminal-tab" aria-labelledby="terminal-title">
        <div class="terminal-bar">
          <h2 id="terminal-title">Shell as pod_user</h2>
          <p id="terminal-status" class="terminal-status" role="status" data-state="connecting">
            {running
              ? "Connecting…"
              : "The pod is not running: start it on the Overview tab, then reconnect."}
          </p>
          <button type="button" id="terminal-reconnect" hidden>
            Reconnect
          </button>
        </div>
        <div
          id="terminal"
          class="terminal-screen"
          data-terminal-path={path}
          data-autostart={running ? "true" : "false"}
          data-cols-max={String(TERMINAL_COLS.max)}
          data-rows-max={String(TERMINAL_ROWS.max)}
        />
        <p class="muted">
          A real terminal in the pod's container, like an SSH session: <code>bash -l</code> in your home,
          resized with the window. It closes after 30 minutes without input or output; a pod has at most{" "}
          {MAX_TERMINALS_PER_POD} open at once.
        </p>
        <Curl
          base={page.base}
          calls={[
            {
              method: "GET",
              path,
              note: 'The terminal is a WebSocket at this address (send Upgrade: websocket, e.g. with websocat and the same header): binary frames are the terminal\'s bytes, JSON text frames resize it ({"type":"resize","cols":120,"rows":40}) and acknowledge output ({"type":"ack","bytes":n}). Without the upgrade the answer is 426.',
            },
            {
              method: "GET",
              path: `/api/pods/${encodeURIComponent(pod.name)}/ssh`,
              note: "The same shell over SSH",
            },
          ]}
        />
      </section>
    </PodPage>
  );
}
