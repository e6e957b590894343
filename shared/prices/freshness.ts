import type postgres from 'postgres';
import type { Queryable } from '../platform/db.ts';

type Fragment = postgres.Fragment;

/** Used when a source has no price_sources row (same default as the column). */
export const DEFAULT_STALE_AFTER_SECONDS = 600;

/**
 * The one freshness rule (docs/design.md §9 and §13; docs/decisions.md "Freshness"). Everything that says
 * "fresh" uses it: GET /health and GET /v2/status (a source), each source entry of GET /v2/prices/{id}
 * and of the keyless lists (a price), the consensus (its fresh sources), the market summary's
 * `fresh_only` and the market index's constituents ("priced fresh by that marketplace").
 *
 * - A source is fresh while its last successful run is at most its stale threshold old.
 * - A price is observed at the time we last saw it at that price, never later than when we read it:
 *   min(source_time, the ingest time of the run that wrote it), or, for a row a whole-market source
 *   still lists, that source's last listing (which confirms it at our clock). An upstream time ahead
 *   of ours (csmarket's `time` is believed up to 5 minutes ahead) thus never makes a price younger
 *   than our reading of it.
 * - A price is fresh iff its source is fresh AND it was observed at most the threshold ago: a price
 *   is never fresh while its source is stale, whatever the upstream stamped on it.
 *
 * Ages are whole seconds (the elapsed time cut down, 0 when ahead of us), as `age_seconds` shows a
 * price's: something is stale once its age exceeds the threshold (30.9 s is "30 s old", fresh against
 * 30; 31 s is stale), the same comparison for a source and a price, so a source entry's `freshness`
 * is exactly `age_seconds <= stale_after_seconds` while its source is fresh. The threshold is the source's `price_sources.stale_after_seconds`, written by
 * each of its runs from SOURCE_<NAME>_STALE_SECONDS (DEFAULT_STALE_AFTER_SECONDS without a row), for
 * every reader alike. Stored times are whole milliseconds (written from JS Dates), so the SQL form
 * below decides exactly as the TypeScript one; test/prices/freshness.test.ts holds them to it.
 */

export type SourceState = 'fresh' | 'stale' | 'never_succeeded';

/** A source's side of the rule: its last success (ms since epoch, null if none) and its stale threshold. */
export type SourceClock = { lastSuccessMs: number | null; staleAfterSeconds: number };

/** Whole seconds since `atMs` (0 when that is ahead of `nowMs`): a price's `age_seconds`. */
export function ageSeconds(atMs: number, nowMs: number): number {
  return Math.max(0, Math.floor((nowMs - atMs) / 1000));
}

/** Whether something that happened at `atMs` is at most `staleAfterSeconds` old in whole seconds (exact integer arithmetic). */
function withinThreshold(atMs: number, staleAfterSeconds: number, nowMs: number): boolean {
  return nowMs - atMs < (staleAfterSeconds + 1) * 1000;
}

/** docs/design.md §9: fresh while the last success is at most the stale threshold old. */
export function sourceState(source: SourceClock, nowMs: number): SourceState {
  if (source.lastSuccessMs === null) return 'never_succeeded';
  return withinThreshold(source.lastSuccessMs, source.staleAfterSeconds, nowMs) ? 'fresh' : 'stale';
}

/** docs/design.md §13: a price observed at `observedMs` is fresh iff its source is fresh and it is at most the threshold old. */
export function priceIsFresh(observedMs: number, source: SourceClock, nowMs: number): boolean {
  return sourceState(source, nowMs) === 'fresh' && withinThreshold(observedMs, source.staleAfterSeconds, nowMs);
}

/**
 * Where the SQL forms find their columns: `price` is an alias of current_prices (or latest_prices),
 * `source` of the price's price_sources row (left-joined on its name).
 */
export type FreshnessAliases = { price: string; source: string };

const DEFAULT_ALIASES: FreshnessAliases = { price: 'p', source: 's' };

/**
 * The price's observed time in SQL (timestamptz): the rule's min(source_time, ingested_at), or the
 * source's last listing for a row it still lists. On current_prices, whose `source_time` already is
 * that listing for such a row, the result is the same.
 */
export function observedAtSql(db: Queryable, aliases: FreshnessAliases = DEFAULT_ALIASES): Fragment {
  const price = (column: string) => db(`${aliases.price}.${column}`);
  const source = (column: string) => db(`${aliases.source}.${column}`);
  return db`greatest(least(${price('source_time')}, ${price('ingested_at')}), case when ${price('listed')} then ${source('listed_at')} end)`;
}

/** The price's stale threshold in SQL (seconds), as every reader takes it. */
export function staleAfterSecondsSql(db: Queryable, aliases: FreshnessAliases = DEFAULT_ALIASES): Fragment {
  return db`coalesce(${db(`${aliases.source}.stale_after_seconds`)}, ${DEFAULT_STALE_AFTER_SECONDS}::int)`;
}

/**
 * priceIsFresh in SQL, as of `now`: a boolean condition over the two aliases, never null (a source
 * without a success, or without a row, is not fresh). floor(age) <= T is age < T + 1 s.
 */
export function freshPriceSql(db: Queryable, now: Date, aliases: FreshnessAliases = DEFAULT_ALIASES): Fragment {
  const horizon = db`${now}::timestamptz - (${staleAfterSecondsSql(db, aliases)} + 1) * interval '1 second'`;
  return db`coalesce(${db(`${aliases.source}.last_success_at`)} > ${horizon} and ${observedAtSql(db, aliases)} > ${horizon}, false)`;
}
