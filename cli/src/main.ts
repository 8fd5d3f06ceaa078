/**
 * `podhost`: the command line of the pod hosting service (docs/cli.md). This entry point is built
 * as CommonJS (`cli/dist/podhost.cjs`, scripts/build-cli.ts): `--version` answers before Node's ES
 * module loader is ever started (about 10–15 ms of a ~40 ms start). Every other run loads the command
 * table (an ES module, with commander), and each command loads only its own module when it runs, so
 * a start costs little more than Node's own.
 */
declare const PODHOST_CLI_VERSION: string;

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === "--version" || argv[0] === "-V")) {
  process.stdout.write(`${PODHOST_CLI_VERSION}\n`);
} else {
  // the bundle's `program.js` (an ES module: the commands are split into chunks loaded on demand)
  void import("./program.js").then(async ({ run }: typeof import("./program")) => {
    process.exitCode = await run(argv, PODHOST_CLI_VERSION);
  });
}
