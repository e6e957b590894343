import type { Queryable, Sql } from '../platform/db.ts';
import type { EcbRateDay } from './ecb.ts';

/**
 * Stored exchange rates (sql/0015_fx_rates.sql): one set per ECB date, and the fx source's health
 * row. Rates travel as the exact decimal text Postgres holds (`rate::text`), never as numbers.
 */

/** The ECB upstream of the fx source (docs/design.md §14: `source: "ecb"` in the `fx` of an ECB currency). */
export const FX_SOURCE = 'ecb';

/** Where a rate comes from (docs/design.md §19 `fx.source`): the ECB, or Steam's own prices (shared/fx/steam-implied.ts). */
export type FxSourceName = 'ecb' | 'steam-implied';

/** The rates conversions use: the newest ECB date's set. */
export type FxRates = {
  /** The ECB date, `YYYY-MM-DD`. */
  as_of: string;
  /** ISO 4217 code → units per 1 EUR, exact decimal text; EUR itself is `'1'`. */
  rates: ReadonlyMap<string, string>;
  /** When the file holding this set was fetched. */
  fetched_at: Date;
  /** Whose rates these are (default `ecb`): a Steam-implied currency is converted from a set of its own, USD at '1'. */
  source?: FxSourceName;
};

/**
 * Stores each day's set, replacing any set already stored for that date (docs/design.md §14: a later file
 * for the same date overwrites it), in one transaction.
 */
export async function saveRateDays(sql: Sql, days: readonly EcbRateDay[], fetchedAt: Date): Promise<void> {
  await sql.begin(async (tx) => {
    for (const day of days) {
      await tx`
        insert into fx_rate_days (as_of, fetched_at) values (${day.date}::date, ${fetchedAt})
        on conflict (as_of) do update set fetched_at = excluded.fetched_at`;
      await tx`delete from fx_rates where as_of = ${day.date}::date`;
      const currencies = [...day.rates.keys()];
      await tx`
        insert into fx_rates (as_of, currency, rate)
        select ${day.date}::date, currency, rate::numeric
        from unnest(${currencies}::text[], ${currencies.map((currency) => day.rates.get(currency)!)}::text[]) as t(currency, rate)`;
    }
  });
}

/** The newest stored set, EUR added as '1'; null before any fetch succeeded. */
export async function findLatestRates(db: Queryable): Promise<FxRates | null> {
  const rows = await db<{ as_of: string; fetched_at: Date; currency: string; rate: string }[]>`
    select d.as_of::text as as_of, d.fetched_at, r.currency, r.rate::text as rate
    from (select as_of, fetched_at from fx_rate_days order by as_of desc limit 1) d
    join fx_rates r using (as_of)`;
  const first = rows[0];
  if (!first) return null;
  const rates = new Map<string, string>([['EUR', '1']]);
  for (const row of rows) rates.set(row.currency, row.rate);
  return { as_of: first.as_of, rates, fetched_at: first.fetched_at };
}

export type FxSourceState = {
  /** The newest stored ECB date, null when none is stored. */
  as_of: string | null;
  /** Currencies of that date's set, EUR included. */
  currencies: number | null;
  last_success_at: Date | null;
  last_attempt_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
  last_rows_skipped: number | null;
  consecutive_failures: number;
};

/** What health reports need: the newest stored date and the source's last outcomes. */
export async function findFxSourceState(db: Queryable): Promise<FxSourceState> {
  const [row] = await db<(Omit<FxSourceState, 'consecutive_failures'> & { consecutive_failures: number | null })[]>`
    select latest.as_of, latest.currencies,
           s.last_success_at, s.last_attempt_at, s.last_error, s.last_error_at, s.last_rows_skipped, s.consecutive_failures
    from (select 1) one
    left join lateral (
      select d.as_of::text as as_of, (select count(*)::int + 1 from fx_rates r where r.as_of = d.as_of) as currencies
      from fx_rate_days d order by d.as_of desc limit 1
    ) latest on true
    left join fx_sources s on s.name = ${FX_SOURCE}`;
  return { ...row!, consecutive_failures: row!.consecutive_failures ?? 0 };
}

/** A fetch whose rates were stored. */
export async function recordFxSuccess(db: Queryable, at: Date, rowsSkipped: number): Promise<void> {
  await db`
    insert into fx_sources (name, last_success_at, last_attempt_at, last_rows_skipped, consecutive_failures)
    values (${FX_SOURCE}, ${at}, ${at}, ${rowsSkipped}, 0)
    on conflict (name) do update set last_success_at = excluded.last_success_at, last_attempt_at = excluded.last_attempt_at,
      last_rows_skipped = excluded.last_rows_skipped, consecutive_failures = 0`;
}

/** A failed or malformed fetch: the error is kept, the stored rates are not touched. Returns the failures in a row, this one included. */
export async function recordFxFailure(db: Queryable, at: Date, error: string): Promise<number> {
  const [row] = await db<{ consecutive_failures: number }[]>`
    insert into fx_sources (name, last_attempt_at, last_error, last_error_at, consecutive_failures)
    values (${FX_SOURCE}, ${at}, ${error}, ${at}, 1)
    on conflict (name) do update set last_attempt_at = excluded.last_attempt_at, last_error = excluded.last_error,
      last_error_at = excluded.last_error_at, consecutive_failures = fx_sources.consecutive_failures + 1
    returning consecutive_failures`;
  return row!.consecutive_failures;
}
