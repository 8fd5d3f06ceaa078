import { AuthPage } from "../layout";

/**
 * What a page answers when it cannot show what was asked: the status and the reason in words, never
 * a stack trace. Signed-out styling (the header needs data a failing page may not have).
 */
export function ErrorPage({ status, message }: { status: number; message: string }) {
  const title = status === 404 ? "Not found" : status === 403 ? "Not allowed" : "Something went wrong";
  return (
    <AuthPage title={title}>
      <h1>{title}</h1>
      <p>{message}</p>
      <p class="muted">HTTP {status}</p>
      <p>
        <a href="/app">Back to your pods</a>
      </p>
    </AuthPage>
  );
}
