import type { Config } from '../platform/config.ts';
import type { WorkerResources } from '../platform/resources.ts';
import { FxUnavailableError, fetchEcbDaily, parseEcbRates } from './ecb.ts';
import { recordFxFailure, recordFxSuccess, saveRateDays } from './repository.ts';

/**
 * One run of the `fx.refresh` job (ingest pool, every SOURCE_FX_INTERVAL_SECONDS and once at start-up): fetch the ECB file,
 * parse it, store its day(s) and record the outcome. A failed or malformed fetch records its error
 * on the source and stores nothing, so the last good rates stay in use (docs/design.md §14).
 */

/** As the source adapters' requests (workers/ingest/run.ts). */
export const FX_REQUEST_TIMEOUT_MS = 15_000;

export type FxRefreshOutcome =
  | { status: 'succeeded'; days: string[]; currencies: number; skipped: number }
  | { status: 'failed'; error: string; consecutiveFailures: number };

/** docs/design.md §19: a failed fetch is retried after 60 s, the wait doubling with each failure in a row, up to the interval. */
export const FX_FIRST_RETRY_MS = 60_000;

/** The wait before retrying after `consecutiveFailures` failures in a row (1: 60 s, 2: 120 s, …), at most `intervalMs`. */
export function fxRetryDelayMs(consecutiveFailures: number, intervalMs: number): number {
  const doublings = Math.min(Math.max(consecutiveFailures, 1) - 1, 30);
  return Math.min(FX_FIRST_RETRY_MS * 2 ** doublings, intervalMs);
}

export async function refreshFxRates(
  deps: Pick<WorkerResources, 'sql' | 'log' | 'now'> & { config: Pick<Config, 'FX_URL'> },
  options: { timeoutMs?: number } = {},
): Promise<FxRefreshOutcome> {
  const { sql, log, now } = deps;
  const started = now();
  try {
    const body = await fetchEcbDaily({ baseUrl: deps.config.FX_URL, timeoutMs: options.timeoutMs ?? FX_REQUEST_TIMEOUT_MS, log });
    const parsed = parseEcbRates(body, started);
    if (parsed.skipped > 0 || parsed.problems.length > 0)
      log.warn({ source: 'fx', skipped: parsed.skipped, problems: parsed.problems }, 'skipped malformed rates');
    await saveRateDays(sql, parsed.days, started);
    await recordFxSuccess(sql, now(), parsed.skipped);
    const newest = parsed.days.reduce((latest, day) => (day.date > latest.date ? day : latest));
    log.info({ source: 'fx', days: parsed.days.map((day) => day.date), currencies: newest.rates.size + 1, skipped: parsed.skipped }, 'fx rates stored');
    return { status: 'succeeded', days: parsed.days.map((day) => day.date), currencies: newest.rates.size + 1, skipped: parsed.skipped };
  } catch (error) {
    if (!(error instanceof FxUnavailableError)) throw error;
    const consecutiveFailures = await recordFxFailure(sql, now(), error.message);
    log.warn({ source: 'fx', err: error.message, consecutive_failures: consecutiveFailures }, 'fx fetch failed; keeping the last good rates');
    return { status: 'failed', error: error.message, consecutiveFailures };
  }
}
