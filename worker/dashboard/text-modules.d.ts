// The dashboard's browser files imported as text (wrangler.toml `[[rules]]` type "Text"): ./assets.ts.
declare module "*.client.js" {
  const text: string;
  export default text;
}
declare module "*.css" {
  const text: string;
  export default text;
}
declare module "*/@xterm/xterm/lib/xterm.js" {
  const text: string;
  export default text;
}
declare module "*/@xterm/addon-fit/lib/addon-fit.js" {
  const text: string;
  export default text;
}
