/**
 * Reading a fetched page with workerd's HTMLRewriter (a streaming HTML parser), never with regexes:
 * its title and the first code block an assistant's share page shows. Text is capped as it is read.
 */

const TITLE_MAX_CHARS = 200;
const CODE_MAX_CHARS = 2 * 1024 * 1024;

export async function pageTitle(html: string): Promise<string> {
  let title = "";
  let done = false;
  await new HTMLRewriter()
    .on("title", {
      text(t) {
        if (!done && title.length < TITLE_MAX_CHARS) title += t.text;
        if (t.lastInTextNode) done = true;
      },
    })
    .transform(new Response(html))
    .arrayBuffer();
  return decodeEntities(title).trim().slice(0, TITLE_MAX_CHARS);
}

/** The first `<pre><code>` block's text and its `language-…` class. */
export async function pageCode(html: string): Promise<{ text: string; language?: string } | null> {
  let found: { text: string; language?: string } | null = null;
  let inside = false;
  let finished = false;
  await new HTMLRewriter()
    .on("pre code", {
      element(el) {
        if (found) return;
        const cls = el.getAttribute("class") ?? "";
        const language = cls
          .split(" ")
          .find((c) => c.startsWith("language-") || c.startsWith("lang-"))
          ?.split("-")
          .slice(1)
          .join("-")
          .toLowerCase();
        found = { text: "", language: language || undefined };
        inside = true;
        el.onEndTag(() => {
          inside = false;
          finished = true;
        });
      },
      text(t) {
        if (found && inside && !finished && found.text.length < CODE_MAX_CHARS) found.text += t.text;
      },
    })
    .transform(new Response(html))
    .arrayBuffer();
  const block = found as { text: string; language?: string } | null;
  return block?.text.trim() ? { ...block, text: decodeEntities(block.text) } : null;
}

const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };

/** HTML character references in text content (HTMLRewriter hands text undecoded). A plain scan. */
export function decodeEntities(text: string): string {
  if (!text.includes("&")) return text;
  let out = "";
  let i = 0;
  while (i < text.length) {
    const amp = text.indexOf("&", i);
    if (amp < 0) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, amp);
    const semi = text.indexOf(";", amp);
    const name = semi > amp && semi - amp <= 10 ? text.slice(amp + 1, semi) : "";
    let decoded: string | undefined;
    if (name.startsWith("#x") || name.startsWith("#X"))
      decoded = codePoint(Number.parseInt(name.slice(2), 16));
    else if (name.startsWith("#")) decoded = codePoint(Number.parseInt(name.slice(1), 10));
    else decoded = NAMED[name];
    if (decoded === undefined) {
      out += "&";
      i = amp + 1;
    } else {
      out += decoded;
      i = semi + 1;
    }
  }
  return out;
}

const codePoint = (n: number) =>
  Number.isInteger(n) && n > 0 && n <= 0x10ffff ? String.fromCodePoint(n) : undefined;
