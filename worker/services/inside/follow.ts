import { fail, ok, type Result, rateLimited } from "../../../shared/errors";
import { LOG_FOLLOW_MAX_SECONDS, type LogSource } from "../../../shared/protocol/inside";
import { callHost } from "../../durable-objects/host-agent/client";
import { cancelRelay, newRelayId, relayStub } from "../../durable-objects/transfer-relay/client";
import type { Bindings } from "../../env";
import type { TeamCall } from "../context";
import { hostFailure, podTarget } from "../pods/target";

/**
 * `GET /api/pods/{name}/logs?follow=true`: a pod's log as server-sent events, the last lines then
 * each new one as the app writes it (the host's side: agent/inside/follow.ts). The events come
 * through a TransferRelay (the same path as file bytes, beside the control socket, so a chatty log
 * never queues with other pods' commands), and only the relay's id and the start's answer cross
 * the host's Durable Object.
 *
 * Follows held at once are capped per pod and per team (RateLimiter leases, given back when the
 * stream ends and lapsing after its bound if a Worker never did); the host caps them per pod and
 * per host again, and bounds each follow's rate and time.
 */

export const LOG_FOLLOW_LIMITS = { perPod: 4, perTeam: 10 } as const;
/** the host's answer comes once the start was read (a filtered start greps the last 4 MB) */
const START_TIMEOUT_MS = 40_000;

export interface FollowInput {
  name: string;
  source: LogSource;
  lines: number;
  grep?: string;
}

export interface LogFollow {
  /** `text/event-stream` bytes */
  body: ReadableStream<Uint8Array>;
}

type Background = (work: Promise<unknown>) => void;

export async function followPodLogs({
  ctx,
  teamId,
  input: q,
  background,
}: TeamCall<FollowInput> & { background: Background }): Promise<Result<LogFollow>> {
  const { name } = q;
  const grep = q.grep === "" ? undefined : q.grep;
  const target = await podTarget(ctx, teamId, name, { running: true });
  if (!target.ok) return target;
  const places = await takePlaces(ctx.env, teamId, name);
  if (!places.ok) return places;
  const { hostId } = target.value;
  const relay = newRelayId(hostId);
  const answer = callHost(
    ctx.env,
    hostId,
    "pod.logs.follow",
    {
      name,
      source: q.source,
      lines: q.lines,
      relay,
      maxSeconds: LOG_FOLLOW_MAX_SECONDS,
      ...(grep !== undefined ? { grep } : {}),
    },
    { timeoutMs: START_TIMEOUT_MS, teamId },
  );
  const bytes = Promise.resolve(relayStub(ctx.env, relay).consume()).catch((error: unknown) =>
    fail("unavailable", String(error)),
  );
  const r = await answer;
  if (!r.ok) {
    await cancelRelay(ctx.env, relay, "the host did not follow the log");
    await bytes;
    await places.value.release();
    return hostFailure(r, name);
  }
  const taken = await bytes;
  if (!taken.ok) {
    await places.value.release();
    return fail("unavailable", `the pod's host did not stream its log: ${taken.message}; try again`);
  }
  // The places are given back when the stream ends, whichever side ends it (a caller who goes away
  // cancels the readable, which fails the pipe).
  const pipe = new TransformStream<Uint8Array, Uint8Array>();
  background(
    taken.value.body
      .pipeTo(pipe.writable)
      .catch(() => undefined)
      .finally(() => places.value.release()),
  );
  return ok({ body: pipe.readable });
}

/** One place among the pod's and one among the team's follows, or 429 naming the full one. */
async function takePlaces(
  env: Bindings,
  teamId: string,
  pod: string,
): Promise<Result<{ release: () => Promise<void> }>> {
  const leaseMs = (LOG_FOLLOW_MAX_SECONDS + 60) * 1000;
  const held: { stub: ReturnType<typeof slots>; lease: string }[] = [];
  const release = async () => {
    await Promise.all(held.map(({ stub, lease }) => stub.leave(lease).catch(() => undefined)));
  };
  const caps: [string, number, string][] = [
    [`logs-follow:pod:${teamId}:${pod}`, LOG_FOLLOW_LIMITS.perPod, `per pod`],
    [`logs-follow:team:${teamId}`, LOG_FOLLOW_LIMITS.perTeam, "per team"],
  ];
  for (const [key, max, scope] of caps) {
    const stub = slots(env, key);
    const place = await stub.enter(max, leaseMs);
    if (!("lease" in place)) {
      await release();
      return rateLimited(
        `too many logs followed at once: at most ${max} ${scope}; close one, or retry in ${place.retryAfter} s`,
        place.retryAfter,
      );
    }
    held.push({ stub, lease: place.lease });
  }
  return ok({ release });
}

const slots = (env: Bindings, key: string) => env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(key));
