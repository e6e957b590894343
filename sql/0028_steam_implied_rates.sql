-- Issue 32 / docs/design.md §19: exchange rates implied by Steam's own prices, for the Steam wallet currencies
-- the ECB does not publish (RUB, UAH, KZT, …). Beside the ECB's sets (0015_fx_rates.sql), which stay
-- as they are. One row per currency: the outcome of its latest completed basket read (a read cut
-- short by a 429 or an outage leaves the row alone). Either a rate, when at least 3 items of the fixed
-- basket had a lowest price in both USD and the currency, or no rate and the reason: the currency is
-- then not offered, never priced from an older read. The fx source's run outcomes live in fx_sources
-- under the name 'steam-implied'.
create table fx_steam_implied_rates (
  currency text primary key check (currency ~ '^[A-Z]{3}$' and currency <> 'USD'),
  -- Units of the currency per 1 USD: the median over the basket of local / USD, half-even to 8 places.
  rate numeric check (rate > 0),
  -- The UTC date of the read that gave the rate (`fx.as_of`).
  as_of date,
  -- Why the currency is not offered (null with a rate).
  reason text,
  -- The basket as read: [{market_hash_name, usd, local}] (decimal strings), so a rate can be recomputed.
  basket jsonb not null default '[]',
  read_at timestamptz not null,
  check ((rate is null) = (as_of is null)),
  check ((rate is null) = (reason is not null))
);
