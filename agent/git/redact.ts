/**
 * Removes a token from text the agent keeps or sends (git's output, build logs). The token can show
 * up as itself, URL-encoded, or inside the basic-auth header value git was given; every form is
 * replaced. Plain substring search: no tenant text ever reaches a RegExp here.
 */
export class Redactor {
  private readonly secrets: string[];

  constructor(token: string | undefined) {
    const forms = token
      ? [token, encodeURIComponent(token), basicAuthValue(token), Buffer.from(token).toString("base64")]
      : [];
    // Longest first, so a form that contains another is replaced whole.
    this.secrets = [...new Set(forms)].filter((s) => s.length >= 4).sort((a, b) => b.length - a.length);
  }

  /** the longest secret form: a stream redactor keeps this much back between chunks */
  get longest(): number {
    return this.secrets[0]?.length ?? 0;
  }

  redact(text: string): string {
    let out = text;
    for (const s of this.secrets) out = out.split(s).join("[redacted]");
    return out;
  }
}

/** `base64("x-access-token:<token>")`: what GitHub, GitLab and Gitea accept as basic auth with a token */
export function basicAuthValue(token: string): string {
  return Buffer.from(`x-access-token:${token}`).toString("base64");
}
