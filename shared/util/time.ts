const DAY_MS = 86_400_000;

/** The oldest instant still inside a window of `days` that ends at `now`. */
export function windowStart(now: Date, days: number): Date {
  return new Date(now.getTime() - days * DAY_MS);
}
