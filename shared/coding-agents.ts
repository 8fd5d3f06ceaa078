/**
 * The catalog of command-line coding agents a pod can install (docs/coding-agents.md), in one place:
 * the npm package, the command it puts on the pod's PATH and the lowest Node major it runs on
 * (the package's `engines.node`; the host also reads the resolved version's own `engines.node` and
 * takes the higher of the two). The Worker serves it (`GET /api/agents`) and checks slugs against
 * it; the host agent installs only what is listed here, so no package name ever comes from a tenant.
 */

export interface CodingAgent {
  slug: string;
  name: string;
  description: string;
  /** the npm package (the registry's name, scope included) */
  package: string;
  /** the command it installs into ~/.npm-global/bin */
  command: string;
  /** the lowest Node major it runs on */
  minNodeMajor: number;
}

const agent = (a: CodingAgent) => a;

export const CODING_AGENTS = [
  agent({
    slug: "claude-code",
    name: "Claude Code",
    description: "Anthropic's agentic coding tool for the terminal",
    package: "@anthropic-ai/claude-code",
    command: "claude",
    minNodeMajor: 22,
  }),
  agent({
    slug: "codex",
    name: "Codex CLI",
    description: "OpenAI's lightweight coding agent that runs in the terminal",
    package: "@openai/codex",
    command: "codex",
    minNodeMajor: 16,
  }),
  agent({
    slug: "gemini-cli",
    name: "Gemini CLI",
    description: "Google's open-source AI agent that brings Gemini to the terminal",
    package: "@google/gemini-cli",
    command: "gemini",
    minNodeMajor: 20,
  }),
  agent({
    slug: "opencode",
    name: "opencode",
    description: "The open-source AI coding agent built for the terminal, for any model provider",
    package: "opencode-ai",
    command: "opencode",
    minNodeMajor: 18,
  }),
  agent({
    slug: "qwen-code",
    name: "Qwen Code",
    description: "A command-line AI workflow tool adapted from Gemini CLI, optimised for Qwen3-Coder models",
    package: "@qwen-code/qwen-code",
    command: "qwen",
    minNodeMajor: 22,
  }),
  agent({
    slug: "auggie",
    name: "Auggie",
    description: "Augment Code's agentic coding CLI, with Augment's context engine",
    package: "@augmentcode/auggie",
    command: "auggie",
    minNodeMajor: 20,
  }),
] as const satisfies readonly CodingAgent[];

export type CodingAgentSlug = (typeof CODING_AGENTS)[number]["slug"];
export const CODING_AGENT_SLUGS = CODING_AGENTS.map((a) => a.slug) as [CodingAgentSlug, ...CodingAgentSlug[]];

export const findCodingAgent = (slug: string): CodingAgent | undefined =>
  CODING_AGENTS.find((a) => a.slug === slug);

/**
 * What version of a catalog agent to install: an exact version (`1.2.3`, `0.0.1-beta.4`) or a
 * dist-tag (`latest`, `next`). Never a range, URL, path or git spec: the host hands it to npm as
 * `<package>@<version>`. Checked by length first, then by regexes without nested quantifiers.
 */
export const AGENT_VERSION_MAX = 64;
const EXACT = /^\d{1,9}\.\d{1,9}\.\d{1,9}(?:-[0-9A-Za-z.-]{1,40})?$/;
const DIST_TAG = /^[a-z][a-z0-9-]{0,31}$/;

export const isAgentVersion = (v: string): boolean =>
  v.length <= AGENT_VERSION_MAX && (EXACT.test(v) || DIST_TAG.test(v));
export const isExactAgentVersion = (v: string): boolean => v.length <= AGENT_VERSION_MAX && EXACT.test(v);
