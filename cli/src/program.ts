import { Command, CommanderError, Option } from "commander";
import type { Ctx, GlobalOptions } from "./lib/context";
import { CliError, EXIT } from "./lib/errors";

/**
 * The command table. Each command names the module that does its work, loaded only when it runs
 * (`podhost pods ls` never parses the deploy code): a command's start costs commander and its own
 * module. A handler gets the context (output, API client), its positional arguments and options;
 * it may return an exit status (exec passes the remote command's through).
 */
// biome-ignore lint/suspicious/noExplicitAny: commander's options are untyped; each handler names the ones it takes
type Handler = (ctx: Ctx, args: string[], opts: any) => Promise<unknown>;
type Loader = () => Promise<Handler>;

let exitCode: number = EXIT.ok;

function act(load: Loader) {
  return async (...received: unknown[]) => {
    const command = received[received.length - 1] as Command;
    const opts = command.optsWithGlobals() as GlobalOptions & Record<string, unknown>;
    const args = command.args;
    const [{ createContext }, handler] = await Promise.all([import("./lib/context"), load()]);
    const ctx = await createContext(opts);
    const code = await handler(ctx, args, opts);
    if (typeof code === "number") exitCode = code;
  };
}

function build(version: string): Command {
  const program = new Command("podhost")
    .description("The podhost command line: deploy the folder you are in, follow logs, run commands.")
    .version(version, "-V, --version")
    .option("--json", "print one JSON document (newline-delimited JSON for streams) on stdout")
    .option("--token <token>", "use this credential (precedence: --token, PODHOST_TOKEN, the stored login)")
    .option(
      "--api <url>",
      "the API's address (default: PODHOST_API, the stored login's, http://localhost:8787)",
    )
    .showSuggestionAfterError()
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });

  // account
  program
    .command("login")
    .description("sign in through the browser (or --device on a machine without one) and store the login")
    .option("--device", "show a code to confirm in any signed-in browser (OAuth device authorization)")
    .option("--no-browser", "print the address but do not try to open a browser")
    .action(act(async () => (await import("./commands/auth")).login));
  program
    .command("logout")
    .description("revoke the stored login on the server and delete it")
    .action(act(async () => (await import("./commands/auth")).logout));
  program
    .command("whoami")
    .description("the user, the team and where the credential comes from")
    .action(act(async () => (await import("./commands/auth")).whoami));

  // the folder you are in
  program
    .command("link [pod]")
    .description("remember the pod for this directory (.podhost.json); without a name, show the link")
    .action(act(async () => (await import("./commands/link")).link));
  program
    .command("unlink")
    .description("forget this directory's pod")
    .action(act(async () => (await import("./commands/link")).unlink));
  program
    .command("deploy [dir]")
    .description(
      "upload the directory (respecting .gitignore and .podhostignore) to the linked pod and wait until it serves it; a pod with a connected repository deploys its branch",
    )
    .option("--pod <name>", "the pod (default: the linked one)")
    .option("--create <name>", "create a new pod from the directory (and link it)")
    .option("--preset <preset>", "with --create: static, php, nodejs or python (default: detected)")
    .option("--plan <slug>", "with --create: the plan")
    .option("--zip", "upload the directory even when a repository is connected")
    .action(act(async () => (await import("./commands/deploy")).deploy));
  program
    .command("status [pod]")
    .description("the pod's status, address and resources")
    .action(act(async () => (await import("./commands/pods")).info));
  program
    .command("open [pod]")
    .description("open the pod's address in the browser")
    .action(act(async () => (await import("./commands/pods")).open));

  const pods = program.command("pods").description("list, create and manage pods");
  pods
    .command("ls")
    .description("the team's pods")
    .option("--all", "every page (default: the first 100)")
    .action(act(async () => (await import("./commands/pods")).ls));
  pods
    .command("create <name>")
    .description("create a pod (202: it runs a few seconds later)")
    .addOption(
      new Option("--preset <preset>", "the runtime")
        .choices(["static", "php", "nodejs", "python"])
        .default("static"),
    )
    .option("--plan <slug>", "the plan (default: launch)")
    .option("--region <region>", "the region")
    .option("--wait", "wait until it runs")
    .action(act(async () => (await import("./commands/pods")).create));
  pods
    .command("info [pod]")
    .description("one pod")
    .action(act(async () => (await import("./commands/pods")).info));
  for (const verb of ["start", "stop", "restart", "reload"] as const)
    pods
      .command(`${verb} [pod]`)
      .description(verb === "reload" ? "reinstall the app's dependencies and restart it" : `${verb} the pod`)
      .action(act(async () => (await import("./commands/pods")).lifecycle(verb)));
  pods
    .command("resize <plan> [pod]")
    .description("move the pod to another plan")
    .action(act(async () => (await import("./commands/pods")).resize));
  pods
    .command("clone <new-name> [pod]")
    .description("a copy of the pod under a new name")
    .action(act(async () => (await import("./commands/pods")).clone));
  pods
    .command("rm [pod]")
    .description("delete the pod and everything in it (asks first unless --yes)")
    .option("-y, --yes", "do not ask")
    .action(act(async () => (await import("./commands/pods")).rm));

  program
    .command("exec")
    .description("run a command in the pod: podhost exec [--pod NAME] -- CMD ARGS…; exits with its status")
    .option("--pod <name>", "the pod (default: the linked one)")
    .option("--timeout <seconds>", "end it after this many seconds")
    .argument("<command...>")
    .action(act(async () => (await import("./commands/exec")).exec));

  program
    .command("logs [pod]")
    .description("the pod's logs")
    .option("-n, --lines <n>", "the last N lines")
    .option("--source <source>", "one source only: app, web, error or build")
    .option("--grep <re>", "only lines matching this PCRE2 expression (applied by the API)")
    .option(
      "--since <time>",
      "read the kept history from this time: 2h, 7d, 2026-11-27 or 2026-11-27T12:00:00Z",
    )
    .option("--until <time>", "read the kept history up to this time (default: now), as --since")
    .option("-f, --follow", "keep printing new lines")
    .action(act(async () => (await import("./commands/logs")).logs));

  const env = program.command("env").description("the app's environment variables");
  const podOpt = () => new Option("--pod <name>", "the pod (default: the linked one)");
  env
    .command("ls")
    .addOption(podOpt())
    .description("every variable")
    .action(act(async () => (await import("./commands/env")).ls));
  env
    .command("get <key>")
    .addOption(podOpt())
    .description("one value")
    .action(act(async () => (await import("./commands/env")).get));
  env
    .command("set <pairs...>")
    .addOption(podOpt())
    .description("set KEY=VALUE… (the app reloads)")
    .action(act(async () => (await import("./commands/env")).set));
  env
    .command("unset <keys...>")
    .addOption(podOpt())
    .description("remove KEY…")
    .action(act(async () => (await import("./commands/env")).unset));
  env
    .command("pull [file]")
    .addOption(podOpt())
    .description("write the variables to a dotenv file (default .env; - for stdout)")
    .action(act(async () => (await import("./commands/env")).pull));
  env
    .command("push [file]")
    .addOption(podOpt())
    .option("--replace", "remove the variables the file does not have")
    .description("set the variables of a dotenv file (default .env; - for stdin)")
    .action(act(async () => (await import("./commands/env")).push));

  const deploys = program.command("deploys").description("git deployments");
  deploys
    .command("ls [pod]")
    .description("the pod's deployments, newest first")
    .action(act(async () => (await import("./commands/deploys")).ls));
  deploys
    .command("log <id> [pod]")
    .description("a deployment's build log (-f: until it ends)")
    .option("-f, --follow", "stream it while it runs")
    .action(act(async () => (await import("./commands/deploys")).log));
  deploys
    .command("rollback [id]")
    .addOption(podOpt())
    .description("back to the previous successful deployment (or the one named)")
    .action(act(async () => (await import("./commands/deploys")).rollback));

  program
    .command("ssh")
    .description(
      "SSH into the pod (adds your public key to it first when missing); arguments after -- go to ssh",
    )
    .addOption(podOpt())
    .option(
      "-i, --identity <file>",
      "the public key to use (default: ~/.ssh/id_ed25519.pub, id_ecdsa.pub, id_rsa.pub)",
    )
    .argument("[ssh-args...]")
    .action(act(async () => (await import("./commands/ssh")).ssh));

  const db = program.command("db").description("database servers beside the app (postgresql, mysql, redis)");
  db.command("ls")
    .addOption(podOpt())
    .description("the pod's databases")
    .action(act(async () => (await import("./commands/db")).ls));
  db.command("add <type>")
    .addOption(podOpt())
    .description("install one (202: installing)")
    .action(act(async () => (await import("./commands/db")).add));
  db.command("creds <type>")
    .addOption(podOpt())
    .description("host, port, user, password")
    .action(act(async () => (await import("./commands/db")).creds));
  db.command("url <type>")
    .addOption(podOpt())
    .description("the connection URL the app uses")
    .action(act(async () => (await import("./commands/db")).url));
  db.command("rm <type>")
    .addOption(podOpt())
    .option("-y, --yes", "do not ask")
    .description("remove it and its data")
    .action(act(async () => (await import("./commands/db")).rm));

  const domains = program.command("domains").description("custom domains");
  domains
    .command("ls")
    .addOption(podOpt())
    .description("the pod's domains")
    .action(act(async () => (await import("./commands/domains")).ls));
  domains
    .command("add <domain>")
    .addOption(podOpt())
    .description("add one (then prove it with a TXT record)")
    .action(act(async () => (await import("./commands/domains")).add));
  domains
    .command("verify <id>")
    .addOption(podOpt())
    .description("check its TXT record now (verified: its certificate; restarts a failed validation)")
    .action(act(async () => (await import("./commands/domains")).verify));
  domains
    .command("rm <id>")
    .addOption(podOpt())
    .description("remove it")
    .action(act(async () => (await import("./commands/domains")).rm));

  const teams = program.command("teams").description("your teams");
  teams
    .command("ls")
    .description("every team of yours (* the active one)")
    .action(act(async () => (await import("./commands/account")).teamsLs));
  teams
    .command("switch <team>")
    .description("make a team active (id, slug or name)")
    .action(act(async () => (await import("./commands/account")).teamsSwitch));

  const tokens = program.command("tokens").description("API tokens (ipk_…) for CI and scripts");
  tokens
    .command("ls")
    .description("the tokens")
    .action(act(async () => (await import("./commands/account")).tokensLs));
  tokens
    .command("create <name>")
    .option("--expires <days>", "days until it expires (0: never)")
    .description("a new token on the active team, printed once")
    .action(act(async () => (await import("./commands/account")).tokensCreate));
  tokens
    .command("revoke <id>")
    .option("-y, --yes", "do not ask")
    .description("revoke one")
    .action(act(async () => (await import("./commands/account")).tokensRevoke));

  const keys = program.command("keys").description("your account's SSH keys");
  keys
    .command("ls")
    .description("the keys")
    .action(act(async () => (await import("./commands/account")).keysLs));
  keys
    .command("add [public-key-file]")
    .option("--name <name>", "its name")
    .option("--auto", "add it to every new pod")
    .description("add a public key (default: the first of ~/.ssh)")
    .action(act(async () => (await import("./commands/account")).keysAdd));
  keys
    .command("rm <id>")
    .description("remove one")
    .action(act(async () => (await import("./commands/account")).keysRm));

  const files = program
    .command("files")
    .description("the pod's files (paths relative to ~/app, or absolute)");
  files
    .command("ls [path]")
    .addOption(podOpt())
    .description("a directory")
    .action(act(async () => (await import("./commands/files")).ls));
  files
    .command("cat <path>")
    .addOption(podOpt())
    .description("a text file's content")
    .action(act(async () => (await import("./commands/files")).cat));
  files
    .command("cp <src> <dst>")
    .addOption(podOpt())
    .description("copy to or from the pod, with progress (the pod's side is :path)")
    .action(act(async () => (await import("./commands/files")).cp));
  files
    .command("rm <path>")
    .addOption(podOpt())
    .description("delete a file or directory")
    .action(act(async () => (await import("./commands/files")).rmPath));

  const backups = program.command("backups").description("backups of the pod's files and databases");
  backups
    .command("ls")
    .addOption(podOpt())
    .description("the pod's backups")
    .action(act(async () => (await import("./commands/backups")).ls));
  backups
    .command("create")
    .addOption(podOpt())
    .option("--note <text>", "a note")
    .description("back up now (202: in progress)")
    .action(act(async () => (await import("./commands/backups")).create));
  backups
    .command("restore <id>")
    .addOption(podOpt())
    .option("-y, --yes", "do not ask")
    .description("replace the pod's files and databases with a backup")
    .action(act(async () => (await import("./commands/backups")).restore));
  backups
    .command("download <id> [file]")
    .addOption(podOpt())
    .description("save a backup's archive (default ID.tar.gz), with progress")
    .action(act(async () => (await import("./commands/backups")).download));
  backups
    .command("rm <id>")
    .addOption(podOpt())
    .option("-y, --yes", "do not ask")
    .description("delete a backup and its archive (asks first)")
    .action(act(async () => (await import("./commands/backups")).rm));
  backups
    .command("import <file>")
    .addOption(podOpt())
    .option("--note <text>", "a note")
    .option("--wait", "wait until the pod's host has test-restored it (completed or failed)")
    .description("upload a .tar.gz as a backup of the pod, with progress (in progress until checked)")
    .action(act(async () => (await import("./commands/backups")).importArchive));

  const git = program.command("git").description("the pod's git repository");
  git
    .command("connect <repo-url>")
    .addOption(podOpt())
    .option("--branch <branch>", "the branch to deploy")
    .option("--auth-token <token>", "a token for a private repository (default: PODHOST_GIT_TOKEN)")
    .option("--build <command>", "the build command")
    .option("--no-auto-deploy", "deploy only when asked (podhost deploy)")
    .description("connect a repository")
    .action(act(async () => (await import("./commands/git")).connect));
  git
    .command("disconnect")
    .addOption(podOpt())
    .description("disconnect it (the deployed code stays)")
    .action(act(async () => (await import("./commands/git")).disconnect));

  const agents = program.command("agents").description("coding agents installed in the pod");
  agents
    .command("ls")
    .addOption(podOpt())
    .description("the pod's agents")
    .action(act(async () => (await import("./commands/agents")).ls));
  agents
    .command("install <agent>")
    .addOption(podOpt())
    .option("--version <version>", "a version of it")
    .description("install one (202: installing)")
    .action(act(async () => (await import("./commands/agents")).install));
  agents
    .command("rm <agent>")
    .addOption(podOpt())
    .description("remove one")
    .action(act(async () => (await import("./commands/agents")).rm));

  program
    .command("completion <shell>")
    .description("a completion script for bash, zsh or fish")
    .action(act(async () => (await import("./commands/completion")).completion));

  return program;
}

/** Runs one command line; answers the exit status (docs/cli.md#exit-codes). */
export async function run(argv: string[], version: string): Promise<number> {
  exitCode = EXIT.ok;
  const program = build(version);
  const json = argv.includes("--json");
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // help and version exit 0; anything commander refused is a usage error
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (error instanceof CliError) {
      const status = error.status ? ` (HTTP ${error.status})` : "";
      if (json)
        process.stdout.write(
          `${JSON.stringify({ error: error.message, status: error.status ?? null, exit_code: error.exitCode })}\n`,
        );
      const pc = (await import("picocolors")).default;
      process.stderr.write(`${pc.red("error:")} ${error.message}${status}\n`);
      return error.exitCode;
    }
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    process.stderr.write(`podhost: unexpected failure: ${message}\n`);
    return EXIT.error;
  }
}
