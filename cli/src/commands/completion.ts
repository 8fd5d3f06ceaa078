import type { Ctx } from "../lib/context";
import { CliError, EXIT } from "../lib/errors";

/**
 * `completion bash|zsh|fish`: a script completing the command words (families, then verbs). It is
 * static text made from the command table, so completing costs no request and no Node start.
 */
const TREE: Record<string, string[]> = {
  login: [],
  logout: [],
  whoami: [],
  link: [],
  unlink: [],
  deploy: [],
  status: [],
  open: [],
  exec: [],
  logs: [],
  ssh: [],
  pods: ["ls", "create", "info", "start", "stop", "restart", "reload", "resize", "clone", "rm"],
  env: ["ls", "get", "set", "unset", "pull", "push"],
  deploys: ["ls", "log", "rollback"],
  db: ["add", "ls", "creds", "url", "rm"],
  domains: ["ls", "add", "verify", "rm"],
  teams: ["ls", "switch"],
  tokens: ["ls", "create", "revoke"],
  keys: ["ls", "add", "rm"],
  files: ["ls", "cat", "cp", "rm"],
  backups: ["ls", "create", "restore", "download", "import", "rm"],
  git: ["connect", "disconnect"],
  agents: ["ls", "install", "rm"],
  completion: ["bash", "zsh", "fish"],
};

function bash(): string {
  const cases = Object.entries(TREE)
    .filter(([, verbs]) => verbs.length)
    .map(([family, verbs]) => `    ${family}) COMPREPLY=($(compgen -W "${verbs.join(" ")}" -- "$cur")) ;;`)
    .join("\n");
  return `# podhost completion for bash: eval "$(podhost completion bash)"
_podhost() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "${Object.keys(TREE).join(" ")}" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
  esac
}
complete -o default -F _podhost podhost
`;
}

function fish(): string {
  const lines = [`complete -c podhost -f -n "__fish_use_subcommand" -a "${Object.keys(TREE).join(" ")}"`];
  for (const [family, verbs] of Object.entries(TREE))
    if (verbs.length)
      lines.push(`complete -c podhost -f -n "__fish_seen_subcommand_from ${family}" -a "${verbs.join(" ")}"`);
  return `# podhost completion for fish: podhost completion fish | source\n${lines.join("\n")}\n`;
}

function zsh(): string {
  return `#compdef podhost
# podhost completion for zsh: eval "$(podhost completion zsh)"
autoload -U +X bashcompinit && bashcompinit
${bash()}`;
}

export async function completion(ctx: Ctx, args: string[]) {
  const shell = args[0];
  const script = shell === "bash" ? bash() : shell === "zsh" ? zsh() : shell === "fish" ? fish() : undefined;
  if (!script) throw new CliError("completion: bash, zsh or fish", EXIT.usage);
  ctx.out.result({ shell, script }, () => script);
}
