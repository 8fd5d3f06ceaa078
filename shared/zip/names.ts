/**
 * Entry names: UTF-8 when the archive says so (general purpose flag bit 11). Without the flag the
 * format means IBM code page 437, but many tools write UTF-8 and never set the bit; valid UTF-8 is
 * read as UTF-8, anything else as CP437 (Windows' built-in zipper on a Western locale).
 */

// CP437 bytes 0x80-0xFF.
const CP437_HIGH =
  "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The name, or null when the archive says UTF-8 and the bytes are not. */
export function decodeEntryName(bytes: Uint8Array, flaggedUtf8: boolean): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    if (flaggedUtf8) return null;
  }
  let out = "";
  for (const b of bytes) out += b < 0x80 ? String.fromCharCode(b) : (CP437_HIGH[b - 0x80] ?? "?");
  return out;
}
