import type { InvitationView } from "../../services/invitations/invitations";
import type { TeamView } from "../../services/teams/teams";
import { ApiForm } from "../components/api-form";
import { Curl } from "../components/curl";
import { DataTable } from "../components/data-table";
import { Time } from "../components/pod-bits";
import { Page, type PageContext } from "../layout";

export interface MemberRow {
  user_id: string;
  name: string;
  email: string;
  role: "owner" | "member";
  joined_at: string;
}

interface TeamPageProps {
  page: PageContext;
  team: TeamView;
  members: MemberRow[];
  /** pending invitations, for the owner only */
  invitations: InvitationView[] | null;
}

/** The active team: its name, members and roles, invitations (owner), and a new team. */
export function TeamPage({ page, team, members, invitations }: TeamPageProps) {
  const owner = team.role === "owner";
  const id = encodeURIComponent(team.id);
  const me = page.caller.user.id;
  return (
    <Page page={page} section="team" title={team.name}>
      <div class="page-head">
        <h1>{team.name}</h1>
        <span class="muted">
          {team.account_type === "personal" ? "Personal team" : "Team"} · you are {team.role}
        </span>
      </div>
      <p>
        <a href="/app/team/alerts">Alerts</a>: who is told when a deploy, a backup or a pod fails.
      </p>
      <p>
        <a href="/app/team/audit">Audit log</a>: every change made to the team, by whom, from where.
      </p>
      {owner ? (
        <section class="card">
          <h2>Name</h2>
          <ApiForm action={`/api/teams/${id}`} method="PUT" success="Renamed.">
            <label>
              Team name
              <input name="name" value={team.name} required maxlength={100} />
            </label>
            <button type="submit">Rename</button>
          </ApiForm>
        </section>
      ) : null}

      <h2>Members</h2>
      <DataTable label="Members" columns={["Name", "E-mail", "Role", "Since", { hidden: "Actions" }]}>
        <tbody>
          {members.map((m) => (
            <tr>
              <th scope="row">{m.name}</th>
              <td>{m.email}</td>
              <td>{m.role}</td>
              <td>
                <Time iso={m.joined_at} />
              </td>
              <td>
                {(owner && m.user_id !== me) || (!owner && m.user_id === me) ? (
                  <ApiForm
                    action={`/api/teams/${id}/members/${encodeURIComponent(m.user_id)}`}
                    method="DELETE"
                    then={m.user_id === me ? "go:/app" : "reload"}
                    confirm={
                      m.user_id === me ? `Leave ${team.name}?` : `Remove ${m.email} from ${team.name}?`
                    }
                    class="inline"
                  >
                    <button type="submit" class="small danger">
                      {m.user_id === me ? "Leave" : "Remove"}
                    </button>
                  </ApiForm>
                ) : null}
              </td>
            </tr>
          ))}
        </tbody>
      </DataTable>

      {invitations ? (
        <>
          <h2>Invitations</h2>
          <section class="card">
            <ApiForm action={`/api/teams/${id}/invitations`} then="reload">
              <div class="grid">
                <label>
                  E-mail
                  <input name="email" type="email" required maxlength={254} />
                </label>
                <label>
                  Role
                  <select name="role">
                    <option value="member">member</option>
                    <option value="owner">owner</option>
                  </select>
                </label>
              </div>
              <button type="submit" class="primary">
                Send the invitation
              </button>
            </ApiForm>
          </section>
          {invitations.length ? (
            <DataTable label="Invitations" columns={["E-mail", "Role", "Expires", { hidden: "Actions" }]}>
              <tbody>
                {invitations.map((inv) => (
                  <tr>
                    <th scope="row">{inv.email}</th>
                    <td>{inv.role}</td>
                    <td>
                      <Time iso={inv.expires_at} />
                    </td>
                    <td class="actions">
                      {inv.token ? (
                        <button
                          type="button"
                          class="small"
                          data-copy={`${page.base}/app/invitations/${encodeURIComponent(inv.token)}`}
                        >
                          Copy link
                        </button>
                      ) : null}
                      <ApiForm
                        action={`/api/teams/${id}/invitations/${encodeURIComponent(inv.id)}`}
                        method="DELETE"
                        confirm={`Withdraw the invitation of ${inv.email}?`}
                        class="inline"
                      >
                        <button type="submit" class="small danger">
                          Withdraw
                        </button>
                      </ApiForm>
                    </td>
                  </tr>
                ))}
              </tbody>
            </DataTable>
          ) : (
            <p class="muted">No pending invitations.</p>
          )}
        </>
      ) : null}

      <h2>A new team</h2>
      <section class="card">
        <ApiForm action="/api/teams" then="reload" success="Created: switch to it above.">
          <label>
            Name
            <input name="name" required maxlength={100} />
          </label>
          <button type="submit">Create team</button>
        </ApiForm>
      </section>

      <Curl
        base={page.base}
        calls={[
          { method: "GET", path: `/api/teams/${id}/members/details`, note: "Members" },
          ...(owner
            ? [
                { method: "GET", path: `/api/teams/${id}/invitations`, note: "Pending invitations" },
                {
                  method: "POST",
                  path: `/api/teams/${id}/invitations`,
                  body: { email: "someone@example.com", role: "member" },
                  note: "Invite",
                },
              ]
            : []),
          { method: "POST", path: "/api/teams", body: { name: "My team" }, note: "A new team" },
        ]}
      />
    </Page>
  );
}
