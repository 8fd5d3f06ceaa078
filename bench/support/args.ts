/** A bench flag that must be a positive integer (`--reps 25`): its value, or an error naming the flag. */
export const positiveInt = (name: string, v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name}: expected a positive integer, got ${v}`);
  return n;
};
