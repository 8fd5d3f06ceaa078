import { DAY } from "../../lib/time";

/** Days and billing periods, all in UTC: a day is `YYYY-MM-DD`, a period a calendar month. */

export const utcDay = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export const dayStartIso = (day: string): string => `${day}T00:00:00.000Z`;

export const nextDay = (day: string): string => utcDay(Date.parse(dayStartIso(day)) + DAY);

/** The day the daily accrual charges when it runs at `now`: the UTC day that ended last. */
export const accrualDayAt = (now: number): string => utcDay(now - DAY);

export interface Period {
  start: string;
  end: string;
}

/** The calendar month holding `ms`, as ISO instants [start, end). */
export function periodAt(ms: number): Period {
  const d = new Date(ms);
  return {
    start: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)).toISOString(),
    end: new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString(),
  };
}
