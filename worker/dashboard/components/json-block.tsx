import { raw } from "hono/html";

/**
 * Data for a page's script: `<script type="application/json" id=…>`, never executed (the CSP
 * allows no inline script anyway) and read with `JSON.parse(el.textContent)`. A script element's
 * text is not HTML-escaped, so `<`, `>` and `&` are written as JSON escapes: tenant text holding
 * `</script>` cannot end the block.
 */
export function JsonBlock({ id, value }: { id: string; value: unknown }) {
  const json = JSON.stringify(value)
    .replaceAll("<", "\\u003c")
    .replaceAll(">", "\\u003e")
    .replaceAll("&", "\\u0026")
    .replaceAll("\u2028", "\\u2028")
    .replaceAll("\u2029", "\\u2029");
  return (
    <script type="application/json" id={id}>
      {raw(json)}
    </script>
  );
}
