/**
 * Exchange rates (docs/design.md §14, issue 20): prices are stored in USD and shown in other currencies
 * through the European Central Bank's daily reference rates.
 *
 * - Source (ecb.ts): the `fx` source is always on and is not a marketplace (not in SOURCES). It
 *   reads `${FX_URL}/stats/eurofxref/eurofxref-daily.xml`, the real `gesmes:Envelope` file, with
 *   fast-xml-parser, keeping every rate as the exact decimal text the ECB wrote. Bodies that are not
 *   that file (truncated, HTML, no date, no USD rate) are rejected whole; odd entries inside a good
 *   file (lower-case or repeated codes, non-numeric or non-positive rates) are skipped and counted.
 * - Storage (repository.ts, sql/0015_fx_rates.sql): one set per ECB date, a later file for the same
 *   date replacing it; conversions use the newest date. The source's last success, attempt and
 *   error live in `fx_sources`, as the marketplaces' do in `price_sources`.
 * - Refresh (refresh.ts): the `fx.refresh` job of the ingest pool, every SOURCE_FX_INTERVAL_SECONDS (6 h) and once at start-up, a failure retried after 60 s doubling up to the interval
 *   (workers/ingest/index.ts). A failed or malformed fetch records its error and stores nothing, so
 *   the last good rates stay in use; BullMQ retries it within minutes.
 * - Health (shared/health/fx.ts): `fx` in GET /health and GET /v2/status is stale when its ECB date
 *   is more than 4 days old (rates still used) and never_succeeded before any rates are stored;
 *   either makes /health 503, the rule of an enabled marketplace.
 * - Conversion (convert.ts): A × rate(X) / rate(USD) exactly in integer arithmetic (one
 *   multiplication, one division with remainder), rounded once half-even to X's ISO 4217 minor units;
 *   the same results as the decimal.js form it replaced (convert-decimal.ts, compared by
 *   test/fx/fx-convert.test.ts). USD → USD is the identity. Routes (`?currency=`) are built on supportedCurrencies, quoteFor and
 *   usdConverter / convertUsd over findLatestRates.
 * - Steam-implied rates (docs/design.md §19, steam-implied.ts, steam-currencies.ts, steam-implied-repository.ts,
 *   sql/0028): the Steam wallet currencies the ECB lacks, at the median over a fixed basket of local /
 *   USD lowest prices read from Steam's priceoverview (the `fx.steam_implied` job); currencies.ts joins
 *   both into what `?currency=` converts to and GET /v2/meta/currencies lists (`fx.source`).
 */

export {
  convertToUsd,
  convertUsd,
  type FxQuote,
  isSupportedCurrency,
  minorUnits,
  quoteFor,
  supportedCurrencies,
  UnsupportedCurrencyError,
  usdConverter,
} from './convert.ts';
export { ECB_DAILY_PATH, type EcbParseResult, type EcbRateDay, FxUnavailableError, fetchEcbDaily, parseEcbRates } from './ecb.ts';
export { FX_FIRST_RETRY_MS, FX_REQUEST_TIMEOUT_MS, type FxRefreshOutcome, fxRetryDelayMs, refreshFxRates } from './refresh.ts';
export {
  FX_SOURCE,
  type FxRates,
  type FxSourceState,
  findFxSourceState,
  findLatestRates,
  recordFxFailure,
  recordFxSuccess,
  saveRateDays,
} from './repository.ts';
