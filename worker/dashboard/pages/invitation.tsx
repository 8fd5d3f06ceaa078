import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { Time } from "../components/pod-bits";
import { AuthPage, Page, type PageContext } from "../layout";

export interface InvitationSummary {
  team_name: string;
  inviter_name: string;
  email: string;
  role: "owner" | "member";
  expires_at: string;
}

function What({ invitation }: { invitation: InvitationSummary }) {
  return (
    <>
      <p>
        <strong>{invitation.inviter_name}</strong> invites you to join the team{" "}
        <strong>{invitation.team_name}</strong> as {invitation.role === "owner" ? "an owner" : "a member"}.
      </p>
      <p class="muted">
        Sent to {invitation.email}; valid until <Time iso={invitation.expires_at} />.
      </p>
    </>
  );
}

const calls = (token: string) => [
  {
    method: "GET",
    path: `/api/invitations/${encodeURIComponent(token)}`,
    auth: false,
    note: "What it is for",
  },
  {
    method: "POST",
    path: "/api/invitations/accept",
    body: { token, email: "you@example.com", name: "Your Name", password: "your password" },
    auth: false,
    note: "Accept signed out: creates the account (or signs in to yours) and joins. Signed in, send only the token with your session cookie; an API token cannot accept (403).",
  },
];

/** Signed in: who invites to which team, and Accept (`POST /api/invitations/accept {token}`). */
export function InvitationPage({
  page,
  token,
  invitation,
}: {
  page: PageContext;
  token: string;
  invitation: InvitationSummary;
}) {
  const other = page.caller.user.email.toLowerCase() !== invitation.email.toLowerCase();
  return (
    <Page page={page} section="team" title="Invitation">
      <section class="card narrow invitation">
        <h1>Join {invitation.team_name}</h1>
        <What invitation={invitation} />
        {other ? (
          <p class="banner" role="note">
            You are signed in as {page.caller.user.email}: accepting adds this account to the team.
          </p>
        ) : null}
        <ApiForm action="/api/invitations/accept" then="go:/app">
          <input type="hidden" name="token" value={token} />
          <button type="submit" class="primary">
            Accept and join {invitation.team_name}
          </button>
        </ApiForm>
        <p>
          <a href="/app">Not now</a>
        </p>
      </section>
      <Curl base={page.base} calls={calls(token)} />
    </Page>
  );
}

/** Signed out: what the invitation is for, then sign in or register and come back here to accept. */
export function InvitationSignedOutPage({
  token,
  invitation,
}: {
  token: string;
  invitation: InvitationSummary;
}) {
  const next = encodeURIComponent(`/app/invitations/${encodeURIComponent(token)}`);
  return (
    <AuthPage title="Invitation">
      <h1>Join {invitation.team_name}</h1>
      <What invitation={invitation} />
      <p>Sign in or create an account to accept; you come back here.</p>
      <div class="actions">
        <a class="button primary" href={`/app/sign-in?next=${next}`}>
          Sign in to accept
        </a>
        <a class="button" href={`/app/register?next=${next}`}>
          Create an account
        </a>
      </div>
    </AuthPage>
  );
}
