import { FEEDBACK_STATUSES, type FeedbackStatus } from "../../db/schema";
import type { FeedbackList } from "../../services/feedback/list";
import type { FeedbackView } from "../../services/feedback/views";
import type { PodView } from "../../services/pods/view";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { podUrl, StatusBadge, Time } from "../components/pod-bits";
import { PodPage, podPath } from "../components/pod-page";
import { Reveal } from "../components/reveal";
import type { PageContext } from "../layout";

export const FEEDBACK_PAGE_SIZE = 20;

const STATUS_LABEL: Record<FeedbackStatus, string> = { new: "New", read: "Read", resolved: "Resolved" };

/** A JSON-typed hidden field: dash.js sends `true` as a boolean, not the string. */
const Flag = ({ name, value }: { name: string; value: boolean }) => (
  <input type="hidden" name={name} value={String(value)} data-json />
);

function Settings({ page, pod, list }: { page: PageContext; pod: PodView; list: FeedbackList }) {
  const settings = `/api/pods/${encodeURIComponent(pod.name)}/feedback/settings`;
  return (
    <section class="card feedback-settings" aria-labelledby="fb-settings">
      <h2 id="fb-settings">Widget</h2>
      <p>
        Collecting feedback: <strong>{list.enabled ? "on" : "off"}</strong>
        {list.enabled
          ? list.visibility === "everyone"
            ? " — every visitor of the pod's pages sees the widget."
            : " — only visitors who opened the share link see the widget."
          : " — visitors see no widget."}{" "}
        The pod must be running to change this.
      </p>
      <div class="actions">
        <ApiForm action={settings} success={list.enabled ? "Disabled." : "Enabled."}>
          <Flag name="enabled" value={!list.enabled} />
          <button type="submit" class={list.enabled ? "danger" : "primary"}>
            {list.enabled ? "Disable feedback" : "Enable feedback"}
          </button>
        </ApiForm>
        <a class="button" href={podUrl(page.ctx.env, pod.domain)} rel="noopener" target="_blank">
          Open the pod's site ↗
        </a>
      </div>
      <ApiForm action={settings} class="visibility" success="Saved.">
        <label>
          Who sees the widget
          <select name="visibility">
            <option value="everyone" selected={list.visibility === "everyone"}>
              Everyone visiting the pod's pages
            </option>
            <option value="link" selected={list.visibility === "link"}>
              Only people who open the share link
            </option>
          </select>
        </label>
        <button type="submit">Save visibility</button>
      </ApiForm>
      <Reveal
        id="fb-share-url"
        label="Share link"
        url={`/api/pods/${encodeURIComponent(pod.name)}/feedback?limit=1`}
        field="share_url"
      />
      <ApiForm
        action={settings}
        confirm="Make a new share link? The current one stops working, also for visitors who opened it."
        success="A new link is in force."
      >
        <Flag name="rotate" value={true} />
        <button type="submit">Rotate the share link</button>
      </ApiForm>
    </section>
  );
}

function Comment({ pod, item }: { pod: PodView; item: FeedbackView }) {
  const one = `/api/pods/${encodeURIComponent(pod.name)}/feedback/${encodeURIComponent(item.id)}`;
  const who = [item.name, item.email].filter(Boolean).join(" · ") || "anonymous";
  return (
    <li class="card comment">
      <div class="comment-head">
        <strong>{who}</strong>
        <Time iso={item.created_at} />
        <StatusBadge status={item.status} />
      </div>
      <p class="comment-text">{item.comment}</p>
      <dl class="facts">
        <dt>Page</dt>
        <dd>
          <code>{item.page_path || "—"}</code>
        </dd>
        {item.element_text ? (
          <>
            <dt>On</dt>
            <dd>{item.element_text}</dd>
          </>
        ) : null}
        {item.pin_selector ? (
          <>
            <dt>Element</dt>
            <dd>
              <code>{item.pin_selector}</code>
            </dd>
          </>
        ) : null}
      </dl>
      <div class="actions">
        {FEEDBACK_STATUSES.filter((s) => s !== item.status).map((status) => (
          <ApiForm action={one} method="PATCH">
            <input type="hidden" name="status" value={status} />
            <button type="submit" class="small">
              Mark {status}
            </button>
          </ApiForm>
        ))}
        <ApiForm action={one} method="DELETE" confirm="Delete this comment? It cannot be brought back.">
          <button type="submit" class="small danger">
            Delete
          </button>
        </ApiForm>
      </div>
    </li>
  );
}

/**
 * A pod's visitor feedback (docs/feedback.md): the widget's settings, the share link (revealed on
 * demand: its token lets anyone post), and the inbox with its status filter. Every comment, name and
 * element text is a stranger's: JSX escapes it, and nothing of it is ever markup.
 */
export function FeedbackTab({
  page,
  pod,
  list,
  status,
}: {
  page: PageContext;
  pod: PodView;
  list: FeedbackList;
  status: FeedbackStatus | undefined;
}) {
  const api = `/api/pods/${encodeURIComponent(pod.name)}/feedback`;
  const here = podPath(pod.name, "feedback");
  const filter = status ? `status=${status}&` : "";
  const all = list.counts.new + list.counts.read + list.counts.resolved;
  const first = list.feedback[0];
  const filters: [FeedbackStatus | undefined, string, number][] = [
    [undefined, "All", all],
    ...FEEDBACK_STATUSES.map((s): [FeedbackStatus, string, number] => [s, STATUS_LABEL[s], list.counts[s]]),
  ];
  return (
    <PodPage page={page} pod={pod} tab="feedback" scripts={["reveal.js"]}>
      <Settings page={page} pod={pod} list={list} />
      <h2 id="fb-inbox">Inbox</h2>
      <nav class="filters" aria-labelledby="fb-inbox">
        {filters.map(([s, label, n]) => (
          <a href={s ? `${here}?status=${s}` : here} aria-current={s === status ? "page" : undefined}>
            {label} ({n})
          </a>
        ))}
      </nav>
      {list.feedback.length === 0 ? (
        <p class="empty-note">
          {status ? `No ${STATUS_LABEL[status].toLowerCase()} comments.` : "No comments yet."}
        </p>
      ) : (
        <ul class="comments">
          {list.feedback.map((item) => (
            <Comment pod={pod} item={item} />
          ))}
        </ul>
      )}
      {list.total > list.limit ? (
        <nav class="pager" aria-label="Pages">
          {list.offset > 0 ? (
            <a href={`${here}?${filter}offset=${Math.max(0, list.offset - list.limit)}`}>← Newer</a>
          ) : (
            <span />
          )}
          <span class="muted">
            {list.offset + 1}–{Math.min(list.offset + list.limit, list.total)} of {list.total}
          </span>
          {list.offset + list.limit < list.total ? (
            <a href={`${here}?${filter}offset=${list.offset + list.limit}`}>Older →</a>
          ) : (
            <span />
          )}
        </nav>
      ) : null}
      <Curl
        base={page.base}
        calls={[
          {
            method: "GET",
            path: `${api}?${filter}limit=${list.limit}&offset=${list.offset}`,
            note: "This inbox, with the settings and the share link",
          },
          { method: "POST", path: `${api}/settings`, body: { enabled: true }, note: "Enable the widget" },
          {
            method: "POST",
            path: `${api}/settings`,
            body: { visibility: "link" },
            note: "Only with the link",
          },
          { method: "POST", path: `${api}/settings`, body: { rotate: true }, note: "A new share link" },
          ...(first
            ? [
                { method: "PATCH", path: `${api}/${first.id}`, body: { status: "resolved" }, note: "Triage" },
                { method: "DELETE", path: `${api}/${first.id}`, note: "Delete a comment" },
              ]
            : []),
        ]}
      />
    </PodPage>
  );
}
