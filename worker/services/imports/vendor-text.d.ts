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
