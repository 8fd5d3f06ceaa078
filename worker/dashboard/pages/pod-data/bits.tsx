/** Small pieces the Deploys, Databases and Backups tabs share. */

/** Bytes as people read them: 1.4 MB. */
export function humanBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${units[unit]}`;
}

/** How long something took, from two ISO times: "42 s", "3 min 5 s"; "—" while it runs. */
export function duration(start: string | null, end: string | null): string {
  if (!start || !end) return "—";
  const seconds = Math.max(0, Math.round((Date.parse(end) - Date.parse(start)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes} min ${seconds % 60} s`;
}

/** A secret's place on the page before Reveal: a mask, filled by pod-data.js with the API's answer. */
export function SecretSlot({ field, id }: { field: string; id?: string }) {
  return (
    <code id={id} class="masked" data-secret-field={field}>
      ••••••••<span class="visually-hidden"> (hidden until revealed)</span>
    </code>
  );
}
