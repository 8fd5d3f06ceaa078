import { ApiForm } from "../components/api-form";
import { AuthPage } from "../layout";

/**
 * The signed-out pages: sign in, register, forgot and reset the password, verify the address. Each
 * form is one call of the public auth API; signing in and registering set the session cookie.
 */

export function SignInPage({ next }: { next: string }) {
  return (
    <AuthPage title="Sign in">
      <h1>Sign in</h1>
      <ApiForm action="/api/auth/login" then={`go:${next}`}>
        <label>
          E-mail
          <input name="email" type="email" autocomplete="username" required maxlength={254} autofocus />
        </label>
        <label>
          Password
          <input name="password" type="password" autocomplete="current-password" required maxlength={200} />
        </label>
        <button type="submit" class="primary">
          Sign in
        </button>
      </ApiForm>
      <p>
        <a href="/app/forgot-password">Forgot your password?</a>
      </p>
      <p>
        New here?{" "}
        <a href={`/app/register${next === "/app" ? "" : `?next=${encodeURIComponent(next)}`}`}>
          Create an account
        </a>
      </p>
    </AuthPage>
  );
}

export function RegisterPage({ next }: { next: string }) {
  return (
    <AuthPage title="Create an account">
      <h1>Create an account</h1>
      <ApiForm action="/api/auth/register" then={`go:${next}`}>
        <label>
          Your name
          <input name="name" autocomplete="name" required maxlength={100} autofocus />
        </label>
        <label>
          E-mail
          <input name="email" type="email" autocomplete="username" required maxlength={254} />
        </label>
        <label>
          Password <span class="muted">(8 characters or more)</span>
          <input
            name="password"
            type="password"
            autocomplete="new-password"
            required
            minlength={8}
            maxlength={200}
          />
        </label>
        <button type="submit" class="primary">
          Create account
        </button>
      </ApiForm>
      <p>
        Have an account?{" "}
        <a href={`/app/sign-in${next === "/app" ? "" : `?next=${encodeURIComponent(next)}`}`}>Sign in</a>
      </p>
    </AuthPage>
  );
}

export function ForgotPasswordPage() {
  return (
    <AuthPage title="Forgot password">
      <h1>Forgot your password?</h1>
      <p>We mail you a link to choose a new one. It works for one hour.</p>
      <ApiForm
        action="/api/auth/forgot-password"
        then="show"
        success="If an account has this address, the mail is on its way."
      >
        <label>
          E-mail
          <input name="email" type="email" autocomplete="username" required maxlength={254} autofocus />
        </label>
        <button type="submit" class="primary">
          Send the link
        </button>
      </ApiForm>
      <p>
        <a href="/app/sign-in">Back to sign in</a>
      </p>
    </AuthPage>
  );
}

/** The page the reset mail links to. The token stays in a hidden field; the new password is posted with it. */
export function ResetPasswordPage({ token }: { token: string }) {
  return (
    <AuthPage title="Choose a new password">
      <h1>Choose a new password</h1>
      <ApiForm action="/api/auth/reset-password" then="go:/app/sign-in?reset=1">
        <input type="hidden" name="token" value={token} />
        <label>
          New password <span class="muted">(8 characters or more)</span>
          <input
            name="password"
            type="password"
            autocomplete="new-password"
            required
            minlength={8}
            maxlength={200}
            autofocus
          />
        </label>
        <button type="submit" class="primary">
          Set the password
        </button>
      </ApiForm>
    </AuthPage>
  );
}

/**
 * The page the verification mail links to. Verifying takes a click, not the GET itself: mail
 * scanners open links, and a GET must change nothing.
 */
export function VerifyEmailPage({ token }: { token: string }) {
  return (
    <AuthPage title="Verify your e-mail">
      <h1>Verify your e-mail address</h1>
      <ApiForm action="/api/auth/verify-email" then="go:/app?verified=1">
        <input type="hidden" name="token" value={token} />
        <button type="submit" class="primary">
          Verify my address
        </button>
      </ApiForm>
    </AuthPage>
  );
}
