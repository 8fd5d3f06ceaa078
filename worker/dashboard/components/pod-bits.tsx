import type { Bindings } from "../../env";

/** A pod's status as a badge; the class gives its colour, the text says it (colour is never the only cue). */
export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge status-${status}`}>{status}</span>;
}

/**
 * A pod's public address. Pods answer at `{name}.{POD_DOMAIN}` on the ingress: https where the API
 * is, and locally on plain http at the ingress's port (`POD_PUBLIC_PORT`, which `npm start` sets).
 */
export function podUrl(env: Bindings, domain: string): string {
  const secure = new URL(env.PUBLIC_URL).protocol === "https:";
  const port = env.POD_PUBLIC_PORT ? `:${env.POD_PUBLIC_PORT}` : "";
  return `${secure ? "https" : "http"}://${domain}${port}/`;
}

/** A time as the browser's locale shows it; dash.js turns it into "3 min ago" beside the exact one. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time datetime={iso} title={iso}>
      {iso.replace("T", " ").slice(0, 16)}
    </time>
  );
}
