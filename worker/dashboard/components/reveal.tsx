/**
 * A secret kept out of the page until the user asks for it (docs/dashboard.md "Safe by
 * construction"): the button GETs `url` from the public API (reveal.js, the session cookie) and
 * shows `field` of its JSON answer in a read-only field, with a copy button. The page itself never
 * holds the value. Pages using it load `scripts={["reveal.js"]}`.
 */
export function Reveal({ url, field, label, id }: { url: string; field: string; label: string; id: string }) {
  return (
    <div class="reveal" data-reveal={url} data-reveal-field={field}>
      <label for={id}>{label}</label>
      <div class="reveal-row">
        <input id={id} readonly value="" placeholder="hidden until revealed" data-reveal-out />
        <button type="button" data-reveal-button>
          Reveal
        </button>
        <button type="button" data-copy-from={`#${id}`} data-reveal-copy hidden>
          Copy
        </button>
      </div>
      <p class="form-error" role="alert" data-error hidden />
    </div>
  );
}
