import { fail, ok, type Result } from "../../../shared/errors";
import type { ServiceContext } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { callTarget, type PodTarget, targetOf } from "../pods/target";
import {
  type KeyMaterial,
  keyMaterial,
  materialFingerprint,
  parsePublicKey,
  sameKey,
} from "../ssh-keys/public-key";
import { finishKeyRemovals, forgetPodKey, recordPodKeys } from "./key-records";

/**
 * The pod's own authorized_keys (the account's keys are services/ssh-keys/). The file inside the pod is
 * the truth (its user may edit it over SSH), so every read and change goes to the host; this side
 * decides what "the same key" means (type and key data, whatever the comment) by reading the file
 * first, so the agent only ever lists, appends or removes exact lines.
 */

const KEYS_TIMEOUT_MS = 15_000;

async function readKeys(ctx: ServiceContext, target: PodTarget): Promise<Result<string[]>> {
  const name = target.found.pod.name;
  const listed = await callTarget(ctx, target, "pod.ssh.keys.list", { name }, { timeoutMs: KEYS_TIMEOUT_MS });
  return listed.ok ? ok(listed.value.keys) : listed;
}

interface PodKeyInput {
  /** the pod's name */
  name: string;
  /** an OpenSSH public key line */
  key: string;
}

export async function listPodKeys({
  ctx,
  teamId,
  input: { name },
}: {
  ctx: ServiceContext;
  teamId: string;
  input: { name: string };
}): Promise<Result<{ keys: string[] }>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const target = targetOf(found.value);
  if (!target.ok) return target;
  const keys = await readKeys(ctx, target.value);
  return keys.ok ? ok({ keys: keys.value }) : keys;
}

export type AddedPodKey = { added: true; key: string; fingerprint: string } | { added: false };

/** Validated like an account key; a key already in the file (any comment) is left as it is. */
export async function addPodKey({
  ctx,
  teamId,
  input: { name, key: keyLine, addedBy },
}: {
  ctx: ServiceContext;
  teamId: string;
  /** `addedBy`: the caller's user id, recorded so the key leaves the team's pods when they do */
  input: PodKeyInput & { addedBy: string };
}): Promise<Result<AddedPodKey>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const parsed = await parsePublicKey(keyLine, "key");
  if (!parsed.ok) return parsed;
  const key = parsed.value;
  const material = { type: key.type, data: key.base64, comment: key.comment };

  const target = targetOf(found.value);
  if (!target.ok) return target;
  const present = await readKeys(ctx, target.value);
  if (!present.ok) return present;
  if (present.value.some((line) => isKey(line, material))) return ok({ added: false });

  const added = await callTarget(
    ctx,
    target.value,
    "pod.ssh.keys.add",
    { name, key: key.normalized },
    { timeoutMs: KEYS_TIMEOUT_MS },
  );
  if (!added.ok) return added;
  if (!added.value.added) return ok({ added: false }); // another request put it there a moment ago
  const departed = await recordPodKeys(ctx.db, found.value.pod.id, addedBy, [
    { fingerprint: key.fingerprint, line: key.normalized, via: "api" },
  ]);
  if (departed) {
    // The caller left the team while this request was on its way: the key goes out again at once.
    await finishKeyRemovals(ctx, { podId: found.value.pod.id });
    return fail("not_found", `pod ${name} not found`);
  }
  await recordEventStatement(
    ctx.db,
    found.value.pod.id,
    "ssh_key_added",
    `SSH key ${key.comment ? `"${key.comment}"` : `(${key.type})`} added`,
    { fingerprint: key.fingerprint, type: key.type },
  );
  return ok({ added: true, key: key.normalized, fingerprint: key.fingerprint });
}

const isKey = (line: string, key: KeyMaterial) => {
  const material = keyMaterial(line);
  return material !== undefined && sameKey(material, key);
};

/**
 * Removes every line of the pod's authorized_keys holding the key. The key is not validated beyond
 * its shape: a key the pod's user wrote by hand (an old DSA key, say) can still be removed.
 */
export async function removePodKey({
  ctx,
  teamId,
  input: { name, key: keyLine },
}: {
  ctx: ServiceContext;
  teamId: string;
  input: PodKeyInput;
}): Promise<Result<void>> {
  const found = await findTeamPod(ctx.db, teamId, name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const trimmed = keyLine.trim();
  if (/[\r\n]/.test(trimmed)) return fail("bad_request", "key: must be one key on one line");
  const material = keyMaterial(trimmed);
  if (!material) {
    return fail(
      "bad_request",
      'key: not an OpenSSH public key; it must look like "ssh-ed25519 AAAA… comment"',
    );
  }

  const target = targetOf(found.value);
  if (!target.ok) return target;
  const taken = await takeKeyOut(ctx, target.value, material, "removed");
  if (!taken.ok) return taken;
  if (taken.value === "no_keys") return fail("not_found", `pod ${name} has no SSH keys`);
  if (taken.value === "absent") return fail("not_found", `this key is not in pod ${name}'s authorized_keys`);
  const fingerprint = await materialFingerprint(material);
  if (fingerprint) await forgetPodKey(ctx.db, found.value.pod.id, fingerprint);
  return ok(undefined);
}

/**
 * Takes every line holding the key out of the pod's authorized_keys, through its host, and records
 * `ssh_key_removed` (`why` ends the event's message: "removed", "removed: its owner left the team").
 */
export async function takeKeyOut(
  ctx: ServiceContext,
  target: PodTarget,
  material: KeyMaterial,
  why: string,
): Promise<Result<"removed" | "absent" | "no_keys">> {
  const name = target.found.pod.name;
  const present = await readKeys(ctx, target);
  if (!present.ok) return present;
  if (present.value.length === 0) return ok("no_keys");
  const line = present.value.find((l) => isKey(l, material));
  if (!line) return ok("absent");

  // The file's own line names the key; the agent drops every line holding it (options, comments aside).
  const result = await callTarget(
    ctx,
    target,
    "pod.ssh.keys.remove",
    { name, key: line },
    { timeoutMs: KEYS_TIMEOUT_MS },
  );
  if (!result.ok) return result;
  if (!result.value.removed) return ok("absent");
  const fingerprint = await materialFingerprint(material);
  // The comment of the line that was in the file names the key best (the request may carry none).
  const comment = keyMaterial(line)?.comment || material.comment;
  await recordEventStatement(
    ctx.db,
    target.found.pod.id,
    "ssh_key_removed",
    `SSH key ${comment ? `"${comment}"` : `(${material.type})`} ${why}`,
    { ...(fingerprint ? { fingerprint } : {}), type: material.type },
  );
  return ok("removed");
}
