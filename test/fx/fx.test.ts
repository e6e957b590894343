import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import {
  convertUsd,
  type FxRates,
  FxUnavailableError,
  findLatestRates,
  fxRetryDelayMs,
  isSupportedCurrency,
  minorUnits,
  parseEcbRates,
  quoteFor,
  refreshFxRates,
  saveRateDays,
  supportedCurrencies,
  UnsupportedCurrencyError,
  usdConverter,
} from '../../shared/fx/index.ts';
import { fxRatesStale } from '../../shared/health/fx.ts';
import { queueName } from '../../shared/jobs/queues.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { ingestPool } from '../../workers/ingest/index.ts';
import { startPools } from '../../workers/runtime.ts';
import { type MarketSimulator, startMarketSimulator } from '../fakes/simulator/server.ts';
import { eventually, scratchTestApp, type TestApp, testClock, testConfig } from '../helpers.ts';

/** Exchange rates (docs/design.md §14, issue 20): the ECB file, its storage, health, conversion and the refresh job. */

const silent = createLogger({ level: 'silent', name: 'fx-test' });
const FIXTURE = readFileSync(join(import.meta.dir, '..', 'fixtures', 'upstream', 'ecb-eurofxref-daily.xml'), 'utf8');
const FIXTURE_DATE = '2026-11-24';
/** The real file's currencies, in its order. */
const ECB_CODES = 'USD JPY BGN CZK DKK GBP HUF PLN RON SEK CHF ISK NOK TRY AUD BRL CAD CNY HKD IDR ILS INR KRW MXN MYR NZD PHP SGD THB ZAR'.split(' ');
const AFTER_FIXTURE = new Date('2026-11-25T10:00:00Z');

/** An ECB envelope around the given day elements (the real file's head and tail). */
function envelope(cubes: string): string {
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">\n' +
    '\t<gesmes:subject>Reference rates</gesmes:subject>\n\t<gesmes:Sender>\n\t\t<gesmes:name>European Central Bank</gesmes:name>\n\t</gesmes:Sender>\n' +
    `\t<Cube>\n${cubes}\t</Cube>\n</gesmes:Envelope>\n`
  );
}
const day = (time: string | null, entries: [string, string][]) =>
  `\t\t<Cube${time === null ? '' : ` time='${time}'`}>\n${entries.map(([currency, rate]) => `\t\t\t<Cube currency='${currency}' rate='${rate}'/>\n`).join('')}\t\t</Cube>\n`;

function fixtureRates(): FxRates {
  const [parsed] = parseEcbRates(FIXTURE, AFTER_FIXTURE).days;
  return { as_of: parsed!.date, rates: new Map([['EUR', '1'], ...parsed!.rates]), fetched_at: AFTER_FIXTURE };
}

/** Rates made for exact arithmetic: USD 1.25 per EUR. */
function ratesOf(rates: Record<string, string>): FxRates {
  return { as_of: '2026-11-24', rates: new Map([['EUR', '1'], ...Object.entries(rates)]), fetched_at: AFTER_FIXTURE };
}

function parseError(text: string, now = AFTER_FIXTURE): string {
  try {
    parseEcbRates(text, now);
  } catch (error) {
    expect(error).toBeInstanceOf(FxUnavailableError);
    return (error as Error).message;
  }
  throw new Error('expected the body to be rejected');
}

describe('the ECB daily file', () => {
  test('the recorded real-format file gives its date and every currency as the exact text the ECB wrote', () => {
    const result = parseEcbRates(FIXTURE, AFTER_FIXTURE);
    expect(result.skipped).toBe(0);
    expect(result.days).toHaveLength(1);
    const [only] = result.days;
    expect(only!.date).toBe(FIXTURE_DATE);
    expect([...only!.rates.keys()]).toEqual(ECB_CODES);
    expect(only!.rates.get('USD')).toBe('1.0834');
    // Trailing zeros are the ECB's text, kept (never through a number).
    expect(only!.rates.get('GBP')).toBe('0.84290');
    expect(only!.rates.get('ISK')).toBe('149.90');
    expect(only!.rates.get('IDR')).toBe('17128.53');
    for (const rate of only!.rates.values()) expect(typeof rate).toBe('string');
  });

  test('bodies that are not the ECB file are rejected whole', () => {
    const cases: [string, string, RegExp][] = [
      ['truncated file', FIXTURE.slice(0, FIXTURE.indexOf("<Cube currency='HUF'") + 30), /invalid XML/],
      ['cut just before the closing tag', FIXTURE.slice(0, FIXTURE.lastIndexOf('</gesmes:Envelope>')), /invalid XML/],
      ['HTML error page', '<!DOCTYPE html><html><head><title>503</title></head><body><h1>Service Unavailable</h1><br></body></html>', /invalid XML/],
      ['well-formed HTML', '<html><body><p>Maintenance</p></body></html>', /not an ECB gesmes:Envelope/],
      ['empty body', '', /invalid XML/],
      ['JSON', '{"rates":{"USD":1.0834}}', /invalid XML/],
      ['envelope without rates', envelope(''), /no Cube of rates/],
      ['a day with no rates at all', envelope(day(FIXTURE_DATE, [])), /no valid USD rate/],
      ['missing time', envelope(day(null, [['USD', '1.0834']])), /not a YYYY-MM-DD date/],
      ['impossible date', envelope(day('2026-02-30', [['USD', '1.0834']])), /not a YYYY-MM-DD date/],
      ['date with a time', envelope(day('2026-11-24T16:00', [['USD', '1.0834']])), /not a YYYY-MM-DD date/],
      ['future date', envelope(day('2026-12-24', [['USD', '1.0834']])), /in the future/],
      [
        'no USD rate',
        envelope(
          day(FIXTURE_DATE, [
            ['JPY', '162.41'],
            ['GBP', '0.84290'],
          ]),
        ),
        /no valid USD rate/,
      ],
      [
        'a USD rate that is not a number',
        envelope(
          day(FIXTURE_DATE, [
            ['USD', 'N/A'],
            ['JPY', '162.41'],
          ]),
        ),
        /no valid USD rate/,
      ],
      ['lower-case usd', envelope(day(FIXTURE_DATE, [['usd', '1.0834']])), /no valid USD rate/],
      ['repeated attribute', envelope(`\t\t<Cube time='${FIXTURE_DATE}'>\n\t\t\t<Cube currency='USD' rate='1.0834' rate='2'/>\n\t\t</Cube>\n`), /invalid XML/],
      ['a body far larger than the file', envelope(day(FIXTURE_DATE, [['USD', '1.0834']])).padEnd(2_000_000, ' '), /not the ECB file/],
    ];
    for (const [name, body, message] of cases) expect([name, parseError(body)]).toEqual([name, expect.stringMatching(message)]);
  });

  test('odd entries inside a good file are skipped and counted, never stored', () => {
    const entries: [string, string][] = [
      ['USD', '1.0834'],
      ['jpy', '162.41'], // lower case
      ['GB', '0.84290'], // not three letters
      ['GBPX', '0.84290'],
      ['EUR', '1.0000'], // the base itself
      ['CHF', '0.9377'],
      ['CHF', '0.9999'], // repeated
      ['SEK', '0'], // not positive
      ['NOK', '-11.7135'],
      ['PLN', '4,2716'], // decimal comma
      ['HUF', '4.0485e2'], // exponent form
      ['CZK', ''],
      ['DKK', ' '],
      ['TRY', 'Infinity'],
      ['BRL', '0x10'],
      ['ZAR', '19.7212'],
    ];
    const result = parseEcbRates(envelope(day(FIXTURE_DATE, entries)), AFTER_FIXTURE);
    expect(result.skipped).toBe(13);
    expect(Object.fromEntries(result.days[0]!.rates)).toEqual({ USD: '1.0834', CHF: '0.9377', ZAR: '19.7212' });
    const missingRate = parseEcbRates(
      envelope(`\t\t<Cube time='${FIXTURE_DATE}'>\n\t\t\t<Cube currency='USD' rate='1.0834'/>\n\t\t\t<Cube currency='JPY'/>\n\t\t</Cube>\n`),
      AFTER_FIXTURE,
    );
    expect(missingRate.skipped).toBe(1);
    expect([...missingRate.days[0]!.rates.keys()]).toEqual(['USD']);
  });

  test('a file with several days gives each; a bad day is left out and the good ones kept', () => {
    const result = parseEcbRates(
      envelope(
        day('2026-11-24', [['USD', '1.0834']]) +
          day('2026-11-23', [['USD', '1.0811']]) +
          day('2026-11-99', [['USD', '1.07']]) +
          day('2026-11-22', [['JPY', '160']]),
      ),
      AFTER_FIXTURE,
    );
    expect(result.days.map((entry) => [entry.date, entry.rates.get('USD')])).toEqual([
      ['2026-11-24', '1.0834'],
      ['2026-11-23', '1.0811'],
    ]);
    expect(result.problems.join('\n')).toMatch(/2026-11-99.*\n.*2026-11-22 has no valid USD rate/);
  });
});

describe('conversion', () => {
  test('supported currencies are EUR and every currency of the file, upper case only', () => {
    const rates = fixtureRates();
    expect(supportedCurrencies(rates)).toEqual(['EUR', ...ECB_CODES].sort());
    expect(supportedCurrencies(rates)).toHaveLength(31);
    for (const code of ['EUR', 'USD', 'JPY', 'ZAR']) expect(isSupportedCurrency(rates, code)).toBe(true);
    for (const code of ['usd', 'Eur', '', 'XXX', 'RUB', ' USD']) expect(isSupportedCurrency(rates, code)).toBe(false);
    expect(() => convertUsd('1.00', rates, 'usd')).toThrow(UnsupportedCurrencyError);
    expect(() => quoteFor(rates, 'RUB')).toThrow(UnsupportedCurrencyError);
  });

  test('minor units follow ISO 4217: 0 for JPY, KRW and ISK, 2 for HUF and the rest, 2 for an unknown code', () => {
    expect(
      Object.fromEntries(['JPY', 'KRW', 'ISK', 'HUF', 'IDR', 'USD', 'EUR', 'GBP', 'CLP', 'VND', 'KWD', 'QQQ'].map((code) => [code, minorUnits(code)])),
    ).toEqual({
      JPY: 0,
      KRW: 0,
      ISK: 0,
      HUF: 2,
      IDR: 2,
      USD: 2,
      EUR: 2,
      GBP: 2,
      CLP: 0,
      VND: 0,
      KWD: 3,
      QQQ: 2,
    });
    for (const code of ECB_CODES) expect([code, minorUnits(code)]).toEqual([code, ['JPY', 'KRW', 'ISK'].includes(code) ? 0 : 2]);
  });

  test('amounts convert as A × rate(X) / rate(USD), rounded once at the minor unit (values checked with exact decimal arithmetic)', () => {
    const rates = fixtureRates();
    expect(convertUsd('100.00', rates, 'EUR')).toBe('92.30');
    expect(convertUsd('12.34', rates, 'JPY')).toBe('1850');
    expect(convertUsd('12.34', rates, 'KRW')).toBe('17185');
    expect(convertUsd('12.34', rates, 'ISK')).toBe('1707');
    expect(convertUsd('2.50', rates, 'GBP')).toBe('1.95');
    expect(convertUsd('1234.56', rates, 'HUF')).toBe('461336.18');
    expect(convertUsd('0.03', rates, 'IDR')).toBe('474.30');
    expect(convertUsd('19.99', rates, 'BRL')).toBe('115.57');
    expect(convertUsd('0', rates, 'EUR')).toBe('0.00');
  });

  test('exact ties round half-even, where a float computation goes the wrong way', () => {
    const rates = fixtureRates();
    // 54.17 × 0.84290 / 1.0834 = 42.145 exactly: half-even keeps 42.14. As floats it is
    // 42.14500000000001, which rounds to 42.15.
    expect(convertUsd('54.17', rates, 'GBP')).toBe('42.14');
    expect(Math.round(((54.17 * 0.8429) / 1.0834) * 100) / 100).toBe(42.15);
    // 162.51 → 126.435 exactly: half-even 126.44; as floats 126.43499999999999 → 126.43.
    expect(convertUsd('162.51', rates, 'GBP')).toBe('126.44');
    expect(Math.round(((162.51 * 0.8429) / 1.0834) * 100) / 100).toBe(126.43);

    const made = ratesOf({ USD: '1.25', GBP: '1', JPY: '5', KRW: '3', ISK: '1.25' });
    expect(convertUsd('1.25625', made, 'GBP')).toBe('1.00'); // 1.005 → even 0
    expect(convertUsd('1.26875', made, 'GBP')).toBe('1.02'); // 1.015 → even 2
    expect(convertUsd('0.15625', made, 'GBP')).toBe('0.12'); // 0.125
    expect(convertUsd('-1.26875', made, 'GBP')).toBe('-1.02');
    expect(convertUsd('-0.00625', made, 'GBP')).toBe('0.00'); // -0.005 → 0, never "-0.00"
    // Zero decimals: 0.25 × 5 / 1.25 = 1 … ties at the unit.
    expect(convertUsd('0.625', made, 'JPY')).toBe('2'); // 2.5 → 2
    expect(convertUsd('1.875', made, 'JPY')).toBe('8'); // 7.5 → 8
    expect(convertUsd('1.875', made, 'KRW')).toBe('4'); // 4.5 → 4
    expect(convertUsd('2.5', made, 'ISK')).toBe('2'); // 2.5 → 2
    expect(convertUsd('3.5', made, 'ISK')).toBe('4'); // 3.5 → 4
  });

  test('a value a hair above a tie rounds up: no intermediate rounding, whatever the digits', () => {
    const made = ratesOf({ USD: '3', GBP: '1' });
    // 3.0750000000000000000003 / 3 = 1.0250000000000000000001: at decimal.js's default 20 digits it
    // would become the tie 1.025 and round to 1.02.
    expect(convertUsd('3.0750000000000000000003', made, 'GBP')).toBe('1.03');
    expect(convertUsd('3.0749999999999999999997', made, 'GBP')).toBe('1.02');
    // A non-terminating quotient: 1 / 3 of a cent is never a tie.
    expect(convertUsd('0.01', made, 'GBP')).toBe('0.00');
    expect(convertUsd('123456789012345678.99', ratesOf({ USD: '1.0834', GBP: '0.84290' }), 'GBP')).toBe('96051068357491390.83');
  });

  test('USD is the identity and EUR divides by the USD rate; the quote is rate(X) / rate(USD) to 8 places', () => {
    const rates = fixtureRates();
    for (const amount of ['12.3', '0.07', '1234.5678', '0']) expect(convertUsd(amount, rates, 'USD')).toBe(amount);
    expect(() => convertUsd('1.2.3', rates, 'USD')).toThrow(RangeError);
    expect(() => convertUsd('1e3', rates, 'EUR')).toThrow(RangeError);
    expect(quoteFor(rates, 'GBP')).toEqual({ base: 'USD', quote: 'GBP', rate: '0.77801366', as_of: FIXTURE_DATE, source: 'ecb' });
    expect(quoteFor(rates, 'JPY').rate).toBe('149.90769799');
    expect(quoteFor(rates, 'EUR').rate).toBe('0.92302012');
    expect(quoteFor(rates, 'USD').rate).toBe('1.00000000');
    const toJpy = usdConverter(rates, 'JPY');
    expect(['1.00', '12.34', '0.01'].map(toJpy)).toEqual(['150', '1850', '1']);
  });
});

describe('storage, refresh and health (a database of its own)', () => {
  let t: TestApp;
  let simulator: MarketSimulator;
  const clock = testClock('2026-11-25T10:00:00Z');

  beforeAll(async () => {
    t = await scratchTestApp({ tag: 'fx', now: clock.now, config: { SOURCES: '' } });
    simulator = startMarketSimulator({ items: [], now: clock.now, seed: 3 });
  }, 30_000);
  afterAll(async () => {
    await simulator?.stop();
    await t?.close();
  }, 30_000);
  const deps = () => ({ sql: t.deps.sql, log: silent, now: clock.now, config: { FX_URL: `${simulator.url}/fx` } });
  const sourceRow = async () => {
    const [row] = await t.deps.sql<{ last_error: string | null; consecutive_failures: number; last_rows_skipped: number | null }[]>`
      select last_error, consecutive_failures, last_rows_skipped from fx_sources where name = 'ecb'`;
    return row;
  };
  type FxEntry = { status: string; as_of: string | null; currencies: number | null; consecutive_failures: number };
  const health = async () => {
    const response = await t.request('/health');
    return { status: response.status, body: (await response.json()) as { status: string; fx: FxEntry } };
  };
  const platform = async () => (await (await t.request('/v2/status')).json()) as { degraded: string[]; components: { fx: FxEntry } };

  test('before any rates, fx has never succeeded: /health answers 503 and /v2/status lists fx as degraded', async () => {
    expect(await findLatestRates(t.deps.sql)).toBeNull();
    const report = await health();
    expect(report.status).toBe(503);
    expect(report.body.status).toBe('degraded');
    expect(report.body.fx).toEqual({
      status: 'never_succeeded',
      source: 'ecb',
      as_of: null,
      updated_at: null,
      currencies: null,
      rows_skipped: null,
      consecutive_failures: 0,
    } as never);
    const status = await platform();
    expect(status.degraded).toContain('fx');
    expect(status.components.fx.status).toBe('never_succeeded');
  });

  test('rates are stored per ECB date; a later file for the same date replaces that date, and the newest date is the one used', async () => {
    const fetchedAt = new Date('2026-11-24T16:05:00Z');
    await saveRateDays(
      t.deps.sql,
      [
        {
          date: '2026-11-23',
          rates: new Map([
            ['USD', '1.0811'],
            ['JPY', '161.90'],
          ]),
        },
      ],
      fetchedAt,
    );
    await saveRateDays(t.deps.sql, parseEcbRates(FIXTURE, AFTER_FIXTURE).days, fetchedAt);
    let latest = await findLatestRates(t.deps.sql);
    expect(latest!.as_of).toBe(FIXTURE_DATE);
    expect(latest!.rates.size).toBe(31);
    expect(latest!.rates.get('EUR')).toBe('1');
    expect(latest!.rates.get('GBP')).toBe('0.84290');
    expect(latest!.fetched_at).toEqual(fetchedAt);

    // The same date again, corrected and with one currency fewer: the whole set is replaced.
    const later = new Date('2026-11-24T17:00:00Z');
    await saveRateDays(
      t.deps.sql,
      [
        {
          date: FIXTURE_DATE,
          rates: new Map([
            ['USD', '1.0835'],
            ['GBP', '0.84300'],
          ]),
        },
      ],
      later,
    );
    latest = await findLatestRates(t.deps.sql);
    expect(Object.fromEntries(latest!.rates)).toEqual({ EUR: '1', USD: '1.0835', GBP: '0.84300' });
    expect(latest!.fetched_at).toEqual(later);
    // An older date written afterwards does not become the latest; its own set is still there.
    await saveRateDays(t.deps.sql, [{ date: '2026-11-20', rates: new Map([['USD', '1.07']]) }], later);
    expect((await findLatestRates(t.deps.sql))!.as_of).toBe(FIXTURE_DATE);
    const [older] = await t.deps.sql<{ rate: string }[]>`select rate::text as rate from fx_rates where as_of = '2026-11-23' and currency = 'JPY'`;
    expect(older!.rate).toBe('161.90');
  });

  test('a refresh against the simulator stores its file; failed and malformed fetches record the error and keep the last good rates', async () => {
    const ok = await refreshFxRates(deps());
    expect(ok).toEqual({ status: 'succeeded', days: ['2026-11-25'], currencies: 31, skipped: 0 });
    const good = await findLatestRates(t.deps.sql);
    expect(good!.as_of).toBe('2026-11-25');
    expect(supportedCurrencies(good!)).toEqual(['EUR', ...ECB_CODES].sort());
    expect(good!.rates.get('BGN')).toBe('1.9558');
    expect(await sourceRow()).toEqual({ last_error: null, consecutive_failures: 0, last_rows_skipped: 0 });

    const failures: [string, RegExp][] = [
      ['fail', /HTTP 500/],
      ['rate_limit', /HTTP 429/],
      ['malformed', /invalid XML/],
      ['wrong_types', /no usable day/],
    ];
    for (const [index, [mode, message]] of failures.entries()) {
      simulator.setMode('fx', mode as never);
      const outcome = await refreshFxRates(deps());
      expect([mode, outcome.status]).toEqual([mode, 'failed']);
      expect(outcome.status === 'failed' && outcome.error).toMatch(message);
      const row = await sourceRow();
      expect(row!.consecutive_failures).toBe(index + 1);
      expect(row!.last_error).toMatch(message);
      expect(await findLatestRates(t.deps.sql)).toEqual(good);
    }
    simulator.setMode('fx', 'stall');
    const stalled = await refreshFxRates(deps(), { timeoutMs: 200 });
    expect(stalled).toEqual({ status: 'failed', error: 'fx: timed out after 200 ms', consecutiveFailures: 5 });
    expect(await findLatestRates(t.deps.sql)).toEqual(good);
    // Rates are fresh by their date, not by the last fetch: failures alone do not make fx stale.
    expect((await health()).body.fx).toMatchObject({ status: 'fresh', as_of: '2026-11-25', consecutive_failures: 5 });

    // partial: every third entry broken; the rest stored, the broken ones counted.
    simulator.setMode('fx', 'partial');
    const partial = await refreshFxRates(deps());
    expect(partial).toEqual({ status: 'succeeded', days: ['2026-11-25'], currencies: 21, skipped: 10 });
    expect((await findLatestRates(t.deps.sql))!.rates.has('JPY')).toBe(false);
    expect(await sourceRow()).toEqual({ last_error: expect.stringMatching(/timed out/) as never, consecutive_failures: 0, last_rows_skipped: 10 });
    simulator.setMode('fx', 'ok');
    expect((await refreshFxRates(deps())).status).toBe('succeeded');
    expect(await findLatestRates(t.deps.sql)).toMatchObject({ as_of: '2026-11-25', rates: good!.rates });
  });

  test('the simulator serves the same file for a day, moves slowly from day to day, and serves Friday on weekends', async () => {
    const fxUrl = `${simulator.url}/fx/stats/eurofxref/eurofxref-daily.xml`;
    const body = async () => {
      const response = await fetch(fxUrl);
      expect(response.headers.get('content-type')).toBe('text/xml');
      return response.text();
    };
    const wednesday = await body();
    clock.set('2026-11-25T23:59:00Z');
    expect(await body()).toBe(wednesday);
    clock.set('2026-11-26T09:00:00Z');
    const thursday = await body();
    expect(thursday).not.toBe(wednesday);
    const [before] = parseEcbRates(wednesday, clock.now()).days;
    const [after] = parseEcbRates(thursday, clock.now()).days;
    expect(after!.date).toBe('2026-11-26');
    for (const code of ECB_CODES) {
      const change = Math.abs(Number(after!.rates.get(code)) / Number(before!.rates.get(code)) - 1);
      expect([code, change < 0.02]).toEqual([code, true]);
    }
    expect(after!.rates.get('BGN')).toBe('1.9558');
    clock.set('2026-11-29T12:00:00Z'); // Sunday
    expect(parseEcbRates(await body(), clock.now()).days[0]!.date).toBe('2026-11-27');
    clock.set('2026-11-25T10:00:00Z');
  });

  test('fx turns stale in /health (503) and /v2/status when the newest ECB date is more than 4 days old; the rates stay in use', async () => {
    expect(fxRatesStale('2026-11-20', new Date('2026-11-24T23:59:59Z'))).toBe(false);
    expect(fxRatesStale('2026-11-20', new Date('2026-11-25T00:00:00Z'))).toBe(true);
    const latest = await findLatestRates(t.deps.sql);
    expect(latest!.as_of).toBe('2026-11-25');

    clock.set('2026-11-29T23:00:00Z'); // 4 days: still fresh
    let report = await health();
    expect(report.status).toBe(200);
    expect(report.body.status).toBe('up');
    expect(report.body.fx).toMatchObject({ status: 'fresh', as_of: '2026-11-25', currencies: 31 });
    expect((await platform()).degraded).not.toContain('fx');

    clock.set('2026-11-30T00:30:00Z'); // 5 days
    report = await health();
    expect(report.status).toBe(503);
    expect(report.body).toMatchObject({ status: 'degraded', fx: { status: 'stale', as_of: '2026-11-25' } });
    const status = await platform();
    expect(status.degraded).toContain('fx');
    expect(status.components.fx).toMatchObject({ status: 'stale', as_of: '2026-11-25' });
    // Still the rates conversions use.
    expect(await findLatestRates(t.deps.sql)).toEqual(latest);
    clock.set('2026-11-25T10:00:00Z');
  });

  test('the ingest pool runs fx.refresh at start-up against the simulator and schedules it every 6 h', async () => {
    await t.deps.sql`truncate fx_rate_days, fx_rates, fx_sources`;
    clock.set(new Date());
    const queuePrefix = `fxjob${process.pid}`;
    const config = testConfig({ DATABASE_URL: t.deps.config.DATABASE_URL, SOURCES: '', FX_URL: `${simulator.url}/fx`, QUEUE_PREFIX: queuePrefix });
    let running = await startPools([ingestPool], config, silent);
    const connection = createWorkerRedis(config.REDIS_URL, 'fx-test');
    const queue = new Queue(queueName('ingest'), { connection, prefix: queuePrefix });
    try {
      const stored = await eventually(async () => (await findLatestRates(t.deps.sql)) ?? undefined, 15_000, 50);
      expect(stored.rates.size).toBe(31);
      expect((await health()).body.fx).toMatchObject({ status: 'fresh', consecutive_failures: 0 });
      const schedulers = await queue.getJobSchedulers();
      expect(schedulers.map((scheduler) => [scheduler.key, scheduler.every]).sort()).toEqual([
        ['ingest-fx', 6 * 60 * 60_000],
        ['ingest-stream-relay', 5_000],
      ]);

      // A restart finds its scheduler still there, next run up to 6 h away: the start-up job fetches anyway.
      await running.stop();
      await t.deps.sql`truncate fx_rate_days, fx_rates, fx_sources`;
      running = await startPools([ingestPool], config, silent);
      const again = await eventually(async () => (await findLatestRates(t.deps.sql)) ?? undefined, 10_000, 50).catch(() => null);
      expect(again?.rates.size).toBe(31);
      expect((await queue.getJobSchedulers()).map((scheduler) => scheduler.key).sort()).toEqual(['ingest-fx', 'ingest-stream-relay']);
    } finally {
      await running.stop();
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
      clock.set('2026-11-25T10:00:00Z');
    }
  }, 40_000);

  test('a failed fetch is retried after 60 s, doubling with each failure in a row up to SOURCE_FX_INTERVAL_SECONDS, until one succeeds (docs/design.md §19)', async () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8, 9, 50].map((failures) => fxRetryDelayMs(failures, 6 * 60 * 60_000) / 1000)).toEqual([
      60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 21600,
    ]);
    expect(fxRetryDelayMs(3, 90_000)).toBe(90_000);

    await t.deps.sql`truncate fx_rate_days, fx_rates, fx_sources`;
    clock.set(new Date());
    const queuePrefix = `fxretry${process.pid}`;
    const config = testConfig({
      DATABASE_URL: t.deps.config.DATABASE_URL,
      SOURCES: '',
      FX_URL: `${simulator.url}/fx`,
      QUEUE_PREFIX: queuePrefix,
      SOURCE_FX_INTERVAL_SECONDS: '3600',
    });
    // The ECB is down when the service starts.
    simulator.setMode('fx', 'fail');
    const running = await startPools([ingestPool], config, silent);
    const connection = createWorkerRedis(config.REDIS_URL, 'fx-retry-test');
    const queue = new Queue(queueName('ingest'), { connection, prefix: queuePrefix });
    try {
      expect((await queue.getJobSchedulers()).find((scheduler) => scheduler.key === 'ingest-fx')?.every).toBe(3_600_000);
      const retry = await eventually(async () => (await queue.getJob('fx-retry-1')) ?? undefined, 15_000, 50);
      expect(retry.opts.delay).toBe(60_000);
      expect(await findLatestRates(t.deps.sql)).toBeNull();
      // It fails again: the next retry waits twice as long.
      await retry.promote();
      const second = await eventually(async () => (await queue.getJob('fx-retry-2')) ?? undefined, 15_000, 50);
      expect(second.opts.delay).toBe(120_000);
      // The ECB is back: the retry (run now instead of in 2 minutes) stores the rates, and no further retry is added.
      simulator.setMode('fx', 'ok');
      await second.promote();
      const stored = await eventually(async () => (await findLatestRates(t.deps.sql)) ?? undefined, 15_000, 50);
      const succeededAt = Date.now();
      expect(stored.rates.size).toBe(31);
      expect((await health()).body.fx).toMatchObject({ status: 'fresh', consecutive_failures: 0 });
      // No retry is added once a fetch succeeded. (One may exist from before: the start-up run and the
      // scheduler's first run can both fail while the ECB is down, each adding its own.)
      for (const job of await queue.getDelayed()) if (job.id?.startsWith('fx-retry-')) expect(job.timestamp).toBeLessThan(succeededAt);
    } finally {
      simulator.setMode('fx', 'ok');
      await running.stop();
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
      clock.set('2026-11-25T10:00:00Z');
    }
  }, 40_000);
});
