// Prebuilt browser files imported as text (wrangler.toml `[[rules]]` type "Text"): ./runtimes.ts.
declare module "*.min.js" {
  const text: string;
  export default text;
}
declare module "*.prod.js" {
  const text: string;
  export default text;
}
declare module "*.min.css" {
  const text: string;
  export default text;
}
// Vue's SFC compiler, its self-contained browser build (./compile.ts loads it for `<script setup>`).
declare module "@vue/compiler-sfc/dist/compiler-sfc.esm-browser.js" {
  export interface SFCDescriptor {
    scriptSetup: { content: string } | null;
    styles: { content: string }[];
  }
  export function parse(
    source: string,
    options?: { filename?: string },
  ): {
    descriptor: SFCDescriptor;
    errors: (Error | { message: string })[];
  };
  export function compileScript(
    descriptor: SFCDescriptor,
    options: { id: string; inlineTemplate?: boolean },
  ): { content: string };
}
