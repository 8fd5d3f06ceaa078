/**
 * What a visitor's comment may hold (docs/feedback.md). Strangers send these: every field has a
 * cap, the body as a whole too (worker/http/body-limit.ts), and a pod keeps at most
 * MAX_POD_FEEDBACK comments, so nobody can fill the database through a pod's widget.
 */
export const FEEDBACK_CAPS = {
  comment: 5000,
  name: 100,
  email: 254,
  pagePath: 2048,
  pinSelector: 1000,
  elementText: 500,
  /** pixels: page coordinates of a pin, and a viewport's width and height */
  coordinate: 1_000_000,
  viewport: 100_000,
} as const;

/**
 * a visitor's own id, the plain string the spec's clients send (the widget makes 128 random bits and
 * keeps them in localStorage): any length up to 64 of a safe alphabet. A short one is guessable, and
 * whoever guesses it reads that visitor's comments (`/mine`): docs/feedback.md says so.
 */
export const SUBMITTER_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** stored comments per pod; the public POST is refused beyond (the owner deletes to make room) */
export const MAX_POD_FEEDBACK = 10_000;

/** `GET /api/feedback/{token}/mine` answers this many of the visitor's newest comments */
export const MINE_LIMIT = 100;
