import { z } from 'zod';
import type { Queryable } from '../platform/db.ts';
import { sourceState } from '../prices/freshness.ts';
import { fxFreshness, fxStateSchema } from './fx.ts';

/** Each enabled source by name: its last successful run and its freshness against its stale threshold. */
export const sourceStateSchema = z.object({
  updated_at: z.string().nullable().describe('End of the last successful ingest run; null if none ever succeeded'),
  status: z.enum(['fresh', 'stale', 'never_succeeded']),
  unknown_names: z.number().int().nullable().describe('Upstream names the catalog does not know, in the last successful run (null before one)'),
  rows_skipped: z.number().int().nullable().describe('Upstream rows skipped as malformed (bad price, wrong types) in the last successful run'),
});
export const sourceStatesSchema = z.record(z.string(), sourceStateSchema);
export const healthReportSchema = z.object({
  status: z.enum(['up', 'degraded']),
  sources: sourceStatesSchema,
  fx: fxStateSchema.describe('The exchange rates (docs/design.md §14): always on; stale or never succeeded makes this answer 503, like a source'),
  stats: z.object({ items: z.number().int().describe('Catalog items held') }),
});
export type HealthReport = z.infer<typeof healthReportSchema>;

type SourceRow = {
  name: string;
  last_success_at: Date | null;
  stale_after_seconds: number;
  last_unknown_names: number | null;
  last_rows_skipped: number | null;
};

/** The health rows of the given sources, by name (a source that never ran has none). */
export async function sourceRowsByName(db: Queryable, names: readonly string[]): Promise<Map<string, SourceRow>> {
  const rows = names.length
    ? await db<SourceRow[]>`
        select name, last_success_at, stale_after_seconds, last_unknown_names, last_rows_skipped
        from price_sources where name in ${db(names as string[])}`
    : [];
  return new Map(rows.map((row) => [row.name, row]));
}

/**
 * docs/interface.md §2.1: each enabled source's last success against its stale threshold (the one freshness rule,
 * shared/prices/freshness.ts, which also decides each of its prices), and the fx source's rates
 * against theirs (shared/health/fx.ts); `up` only when every one of them is fresh.
 */
export async function sourceFreshness(db: Queryable, enabled: readonly string[], now: Date): Promise<HealthReport> {
  const byName = await sourceRowsByName(db, enabled);
  const sources: HealthReport['sources'] = {};
  for (const name of enabled) {
    const row = byName.get(name);
    const last = row?.last_success_at ?? null;
    sources[name] = {
      updated_at: last ? last.toISOString() : null,
      status: sourceState({ lastSuccessMs: last?.getTime() ?? null, staleAfterSeconds: row?.stale_after_seconds ?? 0 }, now.getTime()),
      // Counts of the last successful run only: a failed run keeps the previous ones.
      unknown_names: last ? (row?.last_unknown_names ?? null) : null,
      rows_skipped: last ? (row?.last_rows_skipped ?? null) : null,
    };
  }
  const fx = await fxFreshness(db, now);
  const items = await countCatalogItems(db);
  const allFresh = Object.values(sources).every((source) => source.status === 'fresh') && fx.status === 'fresh';
  return { status: allFresh ? 'up' : 'degraded', sources, fx, stats: { items } };
}

/** Items held; zero until the catalog (a later migration) exists. */
async function countCatalogItems(db: Queryable): Promise<number> {
  const [row] = await db<{ exists: boolean }[]>`select to_regclass('public.catalog_items') is not null as exists`;
  if (!row?.exists) return 0;
  const [count] = await db<{ count: number }[]>`select count(*)::int as count from catalog_items`;
  return count?.count ?? 0;
}
