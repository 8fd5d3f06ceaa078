import type { Result } from "../../../shared/errors";
import type { Bindings } from "../../env";
import type { Notify } from "./journal";

/** Sends a dispatched command's outcome to the workflow instance waiting for it, as an event. */
export async function notifyWorkflow(env: Bindings, target: Notify, outcome: Result<unknown>) {
  try {
    const instance = await env[target.workflow].get(target.instanceId);
    // JSON text: a Result's `unknown` value is not a type workflow events can declare.
    await instance.sendEvent({ type: target.type, payload: JSON.stringify(outcome) });
  } catch (error) {
    // The instance is gone (terminated, or never made): nobody is waiting for this outcome.
    console.warn(
      JSON.stringify({ ...target, msg: "could not deliver a host outcome", error: String(error) }),
    );
  }
}
