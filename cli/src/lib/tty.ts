import { CliError, EXIT } from "./errors";

/**
 * Prompts only on a terminal: never when stdin is not a TTY or CI is set (a pipeline must not hang
 * waiting for an answer nobody will type). The caller names the flag that answers instead.
 */
export function canPrompt(): boolean {
  return Boolean(process.stdin.isTTY) && !isCi();
}

export function isCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "0" && ci.toLowerCase() !== "false";
}

/** Asks yes/no on stderr; without a terminal, fails naming `flag`. */
export async function confirm(message: string, flag: string): Promise<boolean> {
  if (!canPrompt())
    throw new CliError(`${message}: no terminal to ask on; pass ${flag} to go ahead`, EXIT.usage);
  const prompts = await import("@clack/prompts");
  const answer = await prompts.confirm({ message, output: process.stderr });
  return answer === true;
}
