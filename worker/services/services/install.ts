import { eq } from "drizzle-orm";
import { findPlan } from "../../../shared/catalog";
import { fail, ok, type Result } from "../../../shared/errors";
import { newId } from "../../../shared/ids";
import { SERVICE_PORTS, type ServiceType } from "../../../shared/protocol/services";
import { type PodServiceRow, podServices } from "../../db/schema";
import { nowIso } from "../../lib/time";
import { billingAdmission } from "../billing/admission";
import type { TeamCall } from "../context";
import { recordEventStatement } from "../pods/events";
import { findTeamPod } from "../pods/lookup";
import { refuseWhileMoving } from "../pods/moving";
import { hostOf, NOT_RUNNING } from "../pods/target";
import { serviceRowOf } from "./lookup";
import { recordInstallFailed } from "./outcome";
import { newServicePassword, passwordsUsable, sealPassword } from "./passwords";
import { type ServiceView, toServiceView } from "./views";

/**
 * `POST /api/pods/{name}/services`: a row `installing`, its `service_install` event, and the
 * pod-service workflow that asks the host (worker/workflows/pod-service.ts); 202 with the row.
 *
 * Refused: 403 on a plan without database services (Launch), 402 when the team is not payable
 * (services/billing/admission.ts), 400 when the pod is not running, 409
 * when the type is installed or still installing. A failed install (`error`) may be tried again:
 * the retry keeps the first password, because the host adopts a data directory an earlier attempt
 * initialised, and that directory keeps the password it was made with.
 */
export async function installService({
  ctx,
  teamId,
  input,
}: TeamCall<{ name: string; service_type: ServiceType }>): Promise<Result<ServiceView>> {
  const found = await findTeamPod(ctx.db, teamId, input.name);
  if (!found.ok) return found;
  const settled = refuseWhileMoving(found.value);
  if (!settled.ok) return settled;
  const { pod } = found.value;
  const type = input.service_type;
  const plan = findPlan(pod.planSlug);
  if (!plan?.databaseServices)
    return fail(
      "forbidden",
      `database services need the Build plan or higher; pod ${pod.name} is on ${plan?.name ?? pod.planSlug}`,
    );
  const payable = await billingAdmission(ctx, teamId, "installing database services");
  if (!payable.ok) return payable;
  if (pod.status !== "running") return fail("bad_request", NOT_RUNNING);
  const host = hostOf(found.value);
  if (!host.ok) return host;
  const usable = passwordsUsable(ctx.env);
  if (!usable.ok) return usable;

  const earlier = await serviceRowOf(ctx.db, pod.id, type);
  if (earlier && earlier.status !== "error")
    return fail(
      "conflict",
      `pod ${pod.name} already has a ${type} service (${earlier.status === "installing" ? "installing" : "installed"})`,
    );
  let passwordEncrypted = earlier?.passwordEncrypted;
  if (!passwordEncrypted) {
    const sealed = await sealPassword(ctx.env, { podId: pod.id, serviceType: type }, newServicePassword());
    if (!sealed.ok) return sealed;
    passwordEncrypted = sealed.value;
  }
  const now = nowIso();
  const row: PodServiceRow = {
    id: newId("svc"),
    podId: pod.id,
    serviceType: type,
    status: "installing",
    version: null,
    port: SERVICE_PORTS[type],
    passwordEncrypted,
    errorMsg: null,
    createdAt: earlier?.createdAt ?? now,
    updatedAt: now,
  };
  const insert = ctx.db.insert(podServices).values(row);
  const event = recordEventStatement(
    ctx.db,
    pod.id,
    "service_install",
    `installing ${type} on pod ${pod.name}`,
    {
      service_type: type,
    },
  );
  try {
    await (earlier
      ? // the failed attempt's row gives way to the retry's (the unique index allows one per type)
        ctx.db.batch([ctx.db.delete(podServices).where(eq(podServices.id, earlier.id)), insert, event])
      : ctx.db.batch([insert, event]));
  } catch (error) {
    // Two installs at once: the unique (pod, type) index lets one in.
    if (/UNIQUE constraint failed/i.test(String(error)))
      return fail("conflict", `pod ${pod.name} already has a ${type} service (installing)`);
    throw error;
  }
  try {
    await ctx.env.POD_SERVICE.create({ id: row.id, params: { serviceId: row.id } });
  } catch (error) {
    // An install whose workflow never started must not stay `installing`.
    await recordInstallFailed(ctx.db, row.id, `the install could not be started: ${String(error)}`);
    throw error;
  }
  return ok(toServiceView(row, pod));
}
