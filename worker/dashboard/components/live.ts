/**
 * How often the dashboard's status views poll their fragment (htmx `hx-trigger`): the pods list's
 * rows, a pod's status badge and its Overview facts. Issue #26 promises a status change on the page
 * within 2 s; the worst case is this interval plus the fragment's render time, so it is 1.5 s
 * (bench/dashboard.ts reads it from the page and judges the sum).
 */
export const STATUS_POLL = "every 1500ms";
