/**
 * The entry files each runtime's image starts, first match wins, when the app names no start
 * command (no `~/.pod/start`, and for Node.js no `scripts.start`): images/{nodejs,python}/lib/run-app
 * and images/README.md. Those shell scripts hold their own copy; every TypeScript reader (the
 * Worker's ZIP check, the agent's preset read-out and health classifier) imports this one.
 */
export const START_FILES = {
  nodejs: ["server.js", "index.js", "app.js", "main.js"],
  python: ["app.py", "main.py", "server.py"],
} as const;

export type StartFileRuntime = keyof typeof START_FILES;
