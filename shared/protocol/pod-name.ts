import { z } from "zod";

/**
 * A pod's name on the wire, in every op group's params and in the messages' pod states. Its own
 * module so each group (./backups.ts, ./git.ts, …) imports it without importing ./ops.ts, which
 * imports them all.
 */
export const PodName = z.string().regex(/^[a-z][a-z0-9-]{1,38}[a-z0-9]$/);
