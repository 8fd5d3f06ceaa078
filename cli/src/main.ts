/**
 * `podhost`: the command line of the pod hosting service (docs/cli.md). This entry point loads
 * nothing but itself for `--version`; every other run loads the command table (commander), and each
 * command loads only its own module when it runs, so a start costs little more than Node's own.
 */
declare const PODHOST_CLI_VERSION: string;

export {};

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  process.stdout.write(`${PODHOST_CLI_VERSION}\n`);
} else {
  const { run } = await import("./program");
  process.exitCode = await run(argv, PODHOST_CLI_VERSION);
}
