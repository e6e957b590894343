import type { Queryable } from '../platform/db.ts';

/**
 * Stored Steam-implied rates (sql/0028_steam_implied_rates.sql): one row per currency, the outcome of
 * its latest completed basket read, and the source's run outcomes in fx_sources ('steam-implied').
 * Rates travel as the exact decimal text Postgres holds, never as numbers.
 */

/** The fx source name of these rates (`fx.source` and fx_sources.name). */
export const STEAM_IMPLIED_SOURCE = 'steam-implied';

/** One basket item as read: its lowest price in USD and in the currency (decimal strings). */
export type BasketPair = { market_hash_name: string; usd: string; local: string };

export type SteamImpliedState = {
  currency: string;
  /** Units per 1 USD, 8 places; null when the currency is not offered. */
  rate: string | null;
  /** The UTC date of the read that gave the rate; null without one. */
  as_of: string | null;
  /** Why the currency is not offered; null with a rate. */
  reason: string | null;
  basket: BasketPair[];
  read_at: Date;
};

/** A completed read that gave a rate. */
export async function saveSteamImpliedRate(db: Queryable, currency: string, rate: string, basket: readonly BasketPair[], readAt: Date): Promise<void> {
  const asOf = readAt.toISOString().slice(0, 10);
  await db`
    insert into fx_steam_implied_rates (currency, rate, as_of, reason, basket, read_at)
    values (${currency}, ${rate}::numeric, ${asOf}::date, null, ${db.json(basket as never)}, ${readAt})
    on conflict (currency) do update set rate = excluded.rate, as_of = excluded.as_of, reason = null, basket = excluded.basket, read_at = excluded.read_at`;
}

/** Completed reads (or a configuration) that give no rate: each currency is not offered, with `reason`. */
export async function saveSteamImpliedUnavailable(
  db: Queryable,
  currencies: readonly string[],
  reason: string,
  basket: readonly BasketPair[],
  readAt: Date,
): Promise<void> {
  if (currencies.length === 0) return;
  await db`
    insert into fx_steam_implied_rates (currency, rate, as_of, reason, basket, read_at)
    select currency, null, null, ${reason}, ${db.json(basket as never)}, ${readAt} from unnest(${currencies as string[]}::text[]) as t(currency)
    on conflict (currency) do update set rate = null, as_of = null, reason = excluded.reason, basket = excluded.basket, read_at = excluded.read_at`;
}

export async function findSteamImpliedStates(db: Queryable): Promise<Map<string, SteamImpliedState>> {
  const rows = await db<{ currency: string; rate: string | null; as_of: string | null; reason: string | null; basket: BasketPair[]; read_at: Date }[]>`
    select currency, rate::text as rate, as_of::text as as_of, reason, basket, read_at from fx_steam_implied_rates`;
  return new Map(rows.map((row) => [row.currency, { ...row }]));
}

/** A run that finished (every currency read, or the basket unreadable in USD: a completed read too). */
export async function recordSteamImpliedSuccess(db: Queryable, at: Date, answersSkipped: number): Promise<void> {
  await db`
    insert into fx_sources (name, last_success_at, last_attempt_at, last_rows_skipped, consecutive_failures)
    values (${STEAM_IMPLIED_SOURCE}, ${at}, ${at}, ${answersSkipped}, 0)
    on conflict (name) do update set last_success_at = excluded.last_success_at, last_attempt_at = excluded.last_attempt_at,
      last_rows_skipped = excluded.last_rows_skipped, consecutive_failures = 0`;
}

/** A run cut short (429, outage): the currencies it completed are stored, the others keep their rows. Returns the failures in a row. */
export async function recordSteamImpliedFailure(db: Queryable, at: Date, error: string): Promise<number> {
  const [row] = await db<{ consecutive_failures: number }[]>`
    insert into fx_sources (name, last_attempt_at, last_error, last_error_at, consecutive_failures)
    values (${STEAM_IMPLIED_SOURCE}, ${at}, ${error}, ${at}, 1)
    on conflict (name) do update set last_attempt_at = excluded.last_attempt_at, last_error = excluded.last_error,
      last_error_at = excluded.last_error_at, consecutive_failures = fx_sources.consecutive_failures + 1
    returning consecutive_failures`;
  return row!.consecutive_failures;
}
