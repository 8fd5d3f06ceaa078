import type { Child } from "hono/jsx";

export interface ApiFormProps {
  /** the API route, e.g. `/api/pods/{name}/restart`; `{field}` is filled from the form's fields */
  action: string;
  method?: "POST" | "PUT" | "PATCH" | "DELETE";
  /**
   * what follows a success: `reload` (the page again), `go:/app/…` (`{field}` filled from the
   * answer's JSON), `refresh:#id` (an htmx element fetches itself again), `show` (the answer's
   * JSON goes into the form's `[data-result]`) or `show:field` (one field of it: a token shown once)
   */
  then?: string;
  /** shown on success */
  success?: string;
  /** asked with confirm() before sending */
  confirm?: string;
  class?: string;
  id?: string;
  children: Child;
}

/**
 * A form that calls the public API (dash.client.js sends its fields as the JSON body): the
 * dashboard does nothing the API cannot, with the same validation, limits and errors. A 4xx
 * `{error}` is shown in the form's alert, with the status.
 */
export function ApiForm(props: ApiFormProps) {
  return (
    <form
      class={props.class}
      id={props.id}
      data-api={props.action}
      data-method={props.method ?? "POST"}
      data-then={props.then ?? "reload"}
      data-success={props.success}
      data-confirm={props.confirm}
    >
      {props.children}
      <p class="form-error" role="alert" data-error hidden />
      <p class="form-ok" role="status" data-status hidden />
    </form>
  );
}
