import type { Config } from '../../shared/platform/config.ts';
import type { WorkerResources } from '../../shared/platform/resources.ts';
import { claimIngestRun } from '../../shared/prices/ingest.ts';
import { mapSalesToCatalog, recordSalesFailure, writeSalesWindows } from '../../shared/prices/sales.ts';
import { createRequestBudget } from '../../shared/sources/budget.ts';
import { ADAPTERS } from '../../shared/sources/index.ts';
import { sourceSettings } from '../../shared/sources/settings.ts';
import { fetchSkinportSales, type SalesFetchResult } from '../../shared/sources/skinport-sales.ts';
import { SourceRateLimitedError } from '../../shared/sources/types.ts';
import { catalogNames } from './run.ts';

/** The sales reader's runs in ingest_runs (skinport's price runs are `skinport`); its windows and health row are under `skinport`. */
export const SKINPORT_SALES = 'skinport-sales';

const REQUEST_TIMEOUT_MS = 30_000;
const REAL_INTERVAL_SECONDS = 3_600;
const LOCAL_INTERVAL_SECONDS = 300;

/**
 * docs/design.md §19: skinport's sales history is cached upstream for an hour, so it is read hourly
 * (SOURCE_SKINPORT_SALES_INTERVAL_SECONDS), against a local simulator at the local bulk pace (300 s).
 */
export function skinportSalesIntervalSeconds(config: Config): number {
  if (config.SOURCE_SKINPORT_SALES_INTERVAL_SECONDS !== undefined) return config.SOURCE_SKINPORT_SALES_INTERVAL_SECONDS;
  const settings = sourceSettings(config, ADAPTERS.skinport);
  return settings.localDefaultInterval ? LOCAL_INTERVAL_SECONDS : REAL_INTERVAL_SECONDS;
}

export type SalesOutcome =
  | { status: 'succeeded'; runId: string; windows: number; changed: number; combined: number; skipped: number; unknownNames: number }
  | { status: 'failed'; runId: string; error: string }
  | { status: 'duplicate' };

/**
 * One read of skinport's sales history: claimed per schedule slot like an ingest run (a second worker
 * does nothing), within skinport's own request budget (the two endpoints share upstream's 8 requests
 * per 5 minutes) and any Retry-After block, mapped to the catalog and written (shared/prices/sales.ts).
 * Skinport's prices are never touched: a failed read only marks the reader. The keyless snapshot is
 * asked for when a window changed (its `sales_7d`).
 */
export async function runSkinportSales(
  deps: WorkerResources & { requestSnapshot?: (runId: string) => Promise<void> },
  scheduledAt: Date,
): Promise<SalesOutcome> {
  const settings = sourceSettings(deps.config, ADAPTERS.skinport);
  const intervalMs = skinportSalesIntervalSeconds(deps.config) * 1000;
  const slot = Math.floor(scheduledAt.getTime() / intervalMs);
  const started = deps.now();
  const runId = await claimIngestRun(deps.sql, SKINPORT_SALES, slot, new Date(slot * intervalMs), started);
  if (!runId) return { status: 'duplicate' };
  const log = deps.log.child({ source: 'skinport', reader: 'sales', run_id: runId });
  const budget = createRequestBudget(deps.redis, 'skinport', settings.budget, { now: deps.now });
  const fail = async (error: string): Promise<SalesOutcome> => {
    log.warn({ error }, 'sales read failed');
    const at = deps.now();
    await deps.sql`update ingest_runs set status = 'failed', finished_at = ${at}, error = ${error.slice(0, 500)} where id = ${runId}`;
    await recordSalesFailure(deps.sql, { source: 'skinport', runId, error, at });
    return { status: 'failed', runId, error };
  };
  try {
    const blockedMs = await budget.blockedFor();
    if (blockedMs > 0) return await fail(`rate-limited upstream: waiting ${Math.ceil(blockedMs / 1000)} s (Retry-After)`);
    let fetched: SalesFetchResult;
    try {
      fetched = await fetchSkinportSales({ baseUrl: settings.baseUrl, log, timeoutMs: REQUEST_TIMEOUT_MS, acquire: () => budget.acquire(), now: deps.now });
    } catch (error) {
      if (error instanceof SourceRateLimitedError && error.origin === 'upstream') {
        await budget.blockUntil(new Date(deps.now().getTime() + error.retryAfterMs)).catch(() => undefined);
      }
      throw error;
    }
    const mapped = mapSalesToCatalog(fetched.sales, await catalogNames(deps.sql));
    const ingestedAt = deps.now();
    const written = await writeSalesWindows(deps.sql, {
      source: 'skinport',
      runId,
      rows: mapped.staged,
      ingestedAt,
      skipped: fetched.skipped + mapped.unknownVersions,
      unknownNames: mapped.unknownNames,
    });
    await deps.sql`
      update ingest_runs set status = 'succeeded', finished_at = ${deps.now()}, rows_received = ${fetched.sales.length + fetched.skipped},
        rows_written = ${written.changed}, rows_skipped = ${fetched.skipped + mapped.unknownVersions}, unknown_names = ${mapped.unknownNames}
      where id = ${runId}`;
    if (written.combined > 0 && deps.requestSnapshot) {
      await deps.requestSnapshot(runId).catch((error: Error) => log.warn({ err: error.message }, 'could not request a price snapshot; the next run will'));
    }
    const outcome = {
      status: 'succeeded' as const,
      runId,
      windows: fetched.sales.length,
      changed: written.changed,
      combined: written.combined,
      skipped: fetched.skipped + mapped.unknownVersions,
      unknownNames: mapped.unknownNames,
    };
    log.info({ ...outcome, rows: fetched.rows, timings: written.timings }, 'sales read done');
    return outcome;
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
}
