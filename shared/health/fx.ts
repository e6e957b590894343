import { z } from 'zod';
import { FX_SOURCE, findFxSourceState } from '../fx/repository.ts';
import type { Queryable } from '../platform/db.ts';

/**
 * The fx source in GET /health and GET /v2/status (docs/design.md §14). Its freshness is the age of the
 * rates, not of the last fetch: the ECB publishes on working days only, so a fetch every 6 h that
 * finds the same file is still fresh, and rates whose ECB date is more than FX_STALE_AFTER_DAYS
 * calendar days before today (UTC) are stale (still used for conversions, their date shown as
 * `fx.as_of`). Like an enabled marketplace (docs/design.md §9), a stale or never-succeeded fx source makes
 * /health answer 503 and is listed in /v2/status's `degraded`: fx is always on, and prices in
 * other currencies depend on it.
 */

/** A Friday's rates are still fresh on Tuesday (a weekend and a holiday Monday); stale on Wednesday. */
export const FX_STALE_AFTER_DAYS = 4;

export const fxStateSchema = z.object({
  status: z
    .enum(['fresh', 'stale', 'never_succeeded'])
    .describe(`stale: the newest rates are more than ${FX_STALE_AFTER_DAYS} days old (still used); never_succeeded: no rates stored yet`),
  source: z.literal(FX_SOURCE),
  as_of: z.string().nullable().describe('ECB date (YYYY-MM-DD) of the rates in use; null before the first success'),
  updated_at: z.string().nullable().describe('End of the last successful fetch; null if none ever succeeded'),
  currencies: z.number().int().nullable().describe('Currencies the rates in use convert to, EUR and USD included'),
  rows_skipped: z.number().int().nullable().describe('Rate entries skipped as malformed in the last successful fetch'),
  consecutive_failures: z.number().int().describe('Failed or malformed fetches since the last success (the last good rates stay in use)'),
});
export type FxState = z.infer<typeof fxStateSchema>;

/** Whether rates of ECB date `asOf` (`YYYY-MM-DD`) are stale at `now`: more than FX_STALE_AFTER_DAYS calendar days old (UTC). */
export function fxRatesStale(asOf: string, now: Date): boolean {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  return today - Date.parse(`${asOf}T00:00:00Z`) > FX_STALE_AFTER_DAYS * 86_400_000;
}

export async function fxFreshness(db: Queryable, now: Date): Promise<FxState> {
  const state = await findFxSourceState(db);
  const status = state.as_of === null ? 'never_succeeded' : fxRatesStale(state.as_of, now) ? 'stale' : 'fresh';
  return {
    status,
    source: FX_SOURCE,
    as_of: state.as_of,
    updated_at: state.last_success_at?.toISOString() ?? null,
    currencies: state.currencies,
    rows_skipped: state.last_success_at ? state.last_rows_skipped : null,
    consecutive_failures: state.consecutive_failures,
  };
}
