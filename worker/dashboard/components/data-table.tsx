import type { Child } from "hono/jsx";

/** A column's heading: its text, or `{ hidden }` for one only a screen reader reads (an actions column). */
export type Column = string | { hidden: string };

/**
 * A table in its scroll box, the one place the dashboard draws one. At 390 px a wide table scrolls
 * sideways inside `.table-wrap`, so the box is a region (a named `<section>`) named for the table that a keyboard can
 * focus and scroll (axe's `scrollable-region-focusable`, WCAG 2.1.1); the table carries the same
 * name as its caption (read, not shown). `children` is what follows the head: the `<tbody>` (a
 * polled rows component brings its own), with `EmptyRow` when there is nothing to list.
 */
export function DataTable(props: { label: string; columns: Column[]; class?: string; children: Child }) {
  return (
    <section class="table-wrap" aria-label={props.label} tabindex={0}>
      <table class={props.class}>
        <caption class="visually-hidden">{props.label}</caption>
        <thead>
          <tr>
            {props.columns.map((c) =>
              typeof c === "string" ? (
                <th scope="col">{c}</th>
              ) : (
                <th scope="col">
                  <span class="visually-hidden">{c.hidden}</span>
                </th>
              ),
            )}
          </tr>
        </thead>
        {props.children}
      </table>
    </section>
  );
}

/** The row an empty table shows: what is not there yet, across all `span` columns. */
export function EmptyRow(props: { span: number; children: Child }) {
  return (
    <tr>
      <td colspan={props.span} class="empty">
        {props.children}
      </td>
    </tr>
  );
}
