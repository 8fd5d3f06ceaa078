/**
 * Webhook signatures (docs/alerts.md): `Podhost-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>" with the channel's secret>`, the scheme Stripe's webhooks use. The time is inside the
 * signed text, so a receiver that refuses a `t` older than five minutes and remembers the
 * `Podhost-Delivery` ids it has seen for that long is safe from replays; each retry is signed anew.
 */
const encoder = new TextEncoder();

const hex = (bytes: ArrayBuffer) =>
  [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

export async function signatureHeader(secret: string, body: string, timestamp: number): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, encoder.encode(`${timestamp}.${body}`));
  return `t=${timestamp},v1=${hex(mac)}`;
}
