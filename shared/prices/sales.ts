import { z } from 'zod';
import { copyRows, type Queryable, type Sql } from '../platform/db.ts';
import { SALES_WINDOWS, type SalesObservation, type SalesWindowName } from '../sources/types.ts';
import { lapTimer } from '../util/laps.ts';
import { type CatalogNameMap, catalogItemFor } from './ingest.ts';

/**
 * Sales windows (docs/design.md §19; docs/decisions.md "Sales windows"): what items sold for over the last
 * 24 hours, 7, 30 and 90 days, per item and version, from the sources that publish sales (skinport's
 * sales history, steam's priceoverview). Each source's latest window is stored (source_sales), each
 * change of it appended to the history (sales_observations), and the windows combined over sources
 * (item_sales) in the same transaction, in SQL:
 *  - `volume`: the sum of the sources' volumes;
 *  - `median`: the volume-weighted median of the sources' medians (the first median, in ascending
 *    order, at which the cumulated volume reaches half the total; exactly half: the mean of it and
 *    the next, as the ordinary median of an even count);
 *  - `mean`: the volume-weighted mean of the sources' means, rounded half-even to 4 places;
 *  - `min` / `max`: over the sources that publish them; `sources`: the sources with the window.
 * Prices are null when nothing sold (or no source publishes that statistic); a window no source has
 * is null. Exact decimals throughout (Postgres numeric); never interpolated.
 */

/** A sales window in an answer: decimal strings, `volume` a count of sales. */
export const salesWindowSchema = z
  .object({
    median: z.string().nullable().describe('Volume-weighted median of the sources’ median sale prices; null when nothing sold'),
    mean: z
      .string()
      .nullable()
      .describe('Volume-weighted mean of the sources’ mean sale prices (4 places, half-even); null when no source publishes a mean or nothing sold'),
    min: z.string().nullable().describe('Lowest sale over the sources that publish it'),
    max: z.string().nullable().describe('Highest sale over the sources that publish it'),
    volume: z.number().int().describe('Units sold in the window, summed over the sources'),
    sources: z.array(z.string()).describe('The sources that published this window (skinport, steam), in byte order'),
  })
  .nullable();

export const salesSchema = z
  .object({ '24h': salesWindowSchema, '7d': salesWindowSchema, '30d': salesWindowSchema, '90d': salesWindowSchema })
  .describe(
    'docs/design.md §19: what the item sold for (not what it is listed at) over the last 24 hours, 7, 30 and 90 days, combined over the sources that publish sales (skinport’s sales history; steam’s priceoverview, 24 h only). A window no source has is null',
  );

/** `{median, volume}` of the 7-day window in the keyless list (docs/design.md §19): absent when no source has one. */
export const sales7dSchema = z
  .object({ median: z.string().nullable(), volume: z.number().int() })
  .describe(
    'Sales in the last 7 days: the combined median sale price and the units sold (see `sales` on GET /v1/prices/{market_hash_name}); absent when no source publishes a 7-day window',
  );

export const liquiditySchema = z
  .object({
    listings: z.number().int().nullable().describe('Listings summed over the fresh sources that report a count; null when none does'),
    sales_7d: z.number().int().nullable().describe('Units sold in the last 7 days (the 7-day sales window’s volume); null without one'),
    days_to_sell: z
      .string()
      .nullable()
      .describe(
        'listings × 7 / sales_7d, one decimal: how many days today’s supply lasts at last week’s pace of sales. Not a score. Null without listings or sales',
      ),
  })
  .describe('docs/design.md §19: supply against the pace of sales');

export type SalesWindow = NonNullable<z.infer<typeof salesWindowSchema>>;
export type Sales = Record<SalesWindowName, SalesWindow | null>;
export type Liquidity = z.infer<typeof liquiditySchema>;

/** A sales observation mapped to the catalog. */
export type StagedSales = Omit<SalesObservation, 'market_hash_name'> & { catalog_id: string };

/** Maps sales observations to catalog ids; names the catalog lacks and versions an item cannot carry are counted. */
export function mapSalesToCatalog(
  observations: readonly SalesObservation[],
  catalog: CatalogNameMap,
): { staged: StagedSales[]; unknownNames: number; unknownVersions: number } {
  const staged: StagedSales[] = [];
  const unknown = new Set<string>();
  let unknownVersions = 0;
  for (const observation of observations) {
    const item = catalogItemFor(catalog, observation);
    if (item === 'unknown-name') unknown.add(observation.market_hash_name);
    else if (item === 'unknown-version') unknownVersions += 1;
    if (typeof item === 'string') continue;
    const { market_hash_name: _name, ...rest } = observation;
    staged.push({ ...rest, catalog_id: item.catalogId });
  }
  return { staged, unknownNames: unknown.size, unknownVersions };
}

export type SalesWriteResult = { changed: number; combined: number; timings: Record<string, number> };

/**
 * Writes one read of a source's sales windows, in one transaction: windows equal to the source's
 * stored ones (every statistic, as text) are left alone; the others replace them, are appended to the
 * history and recombine their item's window. Duplicates of one key keep the last. The reader's health
 * row moves on in every case.
 */
export async function writeSalesWindows(
  sql: Sql,
  input: { source: string; runId: string; rows: readonly StagedSales[]; ingestedAt: Date; skipped: number; unknownNames: number },
): Promise<SalesWriteResult> {
  const { source, runId, ingestedAt } = input;
  const rows = lastPerKey(input.rows);
  const { timings, lap } = lapTimer();
  const result = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`sales:${source}`}))`;
    await tx`
      create temp table sales_stage (
        catalog_id text not null, version text not null, sales_window text not null, median numeric, mean numeric, min numeric, max numeric,
        volume integer not null, source_time timestamptz not null
      ) on commit drop`;
    if (rows.length > 0) {
      await copyRows(
        tx,
        'sales_stage (catalog_id, version, sales_window, median, mean, min, max, volume, source_time)',
        rows.map((row) => [row.catalog_id, row.version, row.window, row.median, row.mean, row.min, row.max, row.volume, row.source_time.toISOString()]),
      );
    }
    lap('stage');
    // Changed windows replace the source's stored ones and enter the history; their keys are recombined.
    await tx`
      create temp table sales_changed (
        catalog_id text not null, version text not null, sales_window text not null,
        median numeric, mean numeric, min numeric, max numeric, volume integer not null
      ) on commit drop`;
    const changed = await tx`
      with upserted as (
        insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
        select catalog_id, version, ${source}, sales_window, median, mean, min, max, volume, source_time, ${ingestedAt}, ${runId} from sales_stage
        on conflict (catalog_id, version, sales_window, source) do update set
          median = excluded.median, mean = excluded.mean, min = excluded.min, max = excluded.max, volume = excluded.volume,
          source_time = excluded.source_time, ingested_at = excluded.ingested_at, run_id = excluded.run_id
        where source_sales.median::text is distinct from excluded.median::text
           or source_sales.mean::text is distinct from excluded.mean::text
           or source_sales.min::text is distinct from excluded.min::text
           or source_sales.max::text is distinct from excluded.max::text
           or source_sales.volume <> excluded.volume
        returning catalog_id, version, sales_window, median, mean, min, max, volume, source_time
      ), history as (
        insert into sales_observations (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
        select catalog_id, version, ${source}, sales_window, median, mean, min, max, volume, source_time, ${ingestedAt}, ${runId} from upserted
      )
      insert into sales_changed (catalog_id, version, sales_window, median, mean, min, max, volume)
      select catalog_id, version, sales_window, median, mean, min, max, volume from upserted`;
    lap('source_sales');
    let combined = 0;
    if (changed.count > 0) {
      await tx`analyze sales_changed`;
      // source_sales' statistics lag its growth (empty before a first full read): with them the
      // planner chose nested loops over a sequential scan per changed key (74 s for 37 650 keys).
      // Hash joins cost one pass over source_sales whatever its statistics say.
      await tx`set local enable_nestloop = off`;
      // A window no other source has (most: skinport alone publishes 7, 30 and 90 days) is its own
      // combination: written as it is, the rule applied to one source. The rest are recombined.
      const single = await tx`
        with alone as (
          delete from sales_changed c
          where not exists (
            select 1 from source_sales s
            where s.catalog_id = c.catalog_id and s.version = c.version and s.sales_window = c.sales_window and s.source <> ${source})
          returning c.*
        )
        insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at)
        select catalog_id, version, sales_window,
               case when volume > 0 then median end,
               case when volume > 0 and mean is not null then money_scale(round_half_even(mean, 4)) end,
               case when volume > 0 then min end, case when volume > 0 then max end,
               volume, array[${source}::text], ${ingestedAt}
        from alone
        on conflict (catalog_id, version, sales_window) do update set
          median = excluded.median, mean = excluded.mean, min = excluded.min, max = excluded.max, volume = excluded.volume,
          sources = excluded.sources, updated_at = excluded.updated_at`;
      combined = single.count + (single.count < changed.count ? (await recombine(tx, ingestedAt)).count : 0);
    }
    lap('combine');
    await tx`
      insert into sales_readers (name, last_success_at, last_attempt_at, last_error, last_run_id, last_rows_written, last_rows_skipped, last_unknown_names, consecutive_failures)
      values (${source}, ${ingestedAt}, ${ingestedAt}, null, ${runId}, ${changed.count}, ${input.skipped}, ${input.unknownNames}, 0)
      on conflict (name) do update set
        last_success_at = excluded.last_success_at, last_attempt_at = excluded.last_attempt_at, last_error = null, last_run_id = excluded.last_run_id,
        last_rows_written = excluded.last_rows_written, last_rows_skipped = excluded.last_rows_skipped,
        last_unknown_names = excluded.last_unknown_names, consecutive_failures = 0`;
    return { changed: changed.count, combined };
  });
  lap('commit');
  return { ...result, timings };
}

/** The combined windows of the keys in `sales_changed`, from every source's stored window (the rule in this module's comment). */
function recombine(tx: Queryable, at: Date) {
  // One pass groups every key; the weighted median needs its ordered pass only where two or more
  // sources sold something (most keys have one: its median is the answer).
  return tx`
    with inputs as materialized (
      select s.catalog_id, s.version, s.sales_window, s.source, s.median, s.mean, s.min, s.max, s.volume
      from source_sales s
      join sales_changed k on k.catalog_id = s.catalog_id and k.version = s.version and k.sales_window = s.sales_window
    ), totals as (
      select catalog_id, version, sales_window,
             sum(volume)::int as volume,
             array_agg(source order by source collate "C") as sources,
             count(*) filter (where median is not null and volume > 0) as priced,
             max(median) filter (where median is not null and volume > 0) as only_median,
             min(min) filter (where volume > 0) as min,
             max(max) filter (where volume > 0) as max,
             sum(mean * volume) filter (where mean is not null and volume > 0) as mean_weight,
             sum(volume) filter (where mean is not null and volume > 0) as mean_volume
      from inputs
      group by catalog_id, version, sales_window
    ), weighted as (
      select i.catalog_id, i.version, i.sales_window, i.median,
             sum(i.volume) over w as cumulated,
             sum(i.volume) over (partition by i.catalog_id, i.version, i.sales_window) as total,
             lead(i.median) over w as next_median
      from inputs i
      join totals t on t.catalog_id = i.catalog_id and t.version = i.version and t.sales_window = i.sales_window and t.priced > 1
      where i.median is not null and i.volume > 0
      window w as (partition by i.catalog_id, i.version, i.sales_window order by i.median, i.source rows between unbounded preceding and current row)
    ), medians as (
      select distinct on (catalog_id, version, sales_window) catalog_id, version, sales_window,
             case when 2 * cumulated = total and next_median is not null then money_scale((median + next_median) / 2) else median end as median
      from weighted
      where 2 * cumulated >= total
      order by catalog_id, version, sales_window, cumulated
    )
    insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at)
    select t.catalog_id, t.version, t.sales_window,
           case when t.priced > 1 then m.median else t.only_median end,
           case when t.mean_volume > 0 then money_scale(round_half_even(t.mean_weight / t.mean_volume, 4)) end,
           t.min, t.max, t.volume, t.sources, ${at}
    from totals t
    left join medians m on m.catalog_id = t.catalog_id and m.version = t.version and m.sales_window = t.sales_window
    on conflict (catalog_id, version, sales_window) do update set
      median = excluded.median, mean = excluded.mean, min = excluded.min, max = excluded.max, volume = excluded.volume,
      sources = excluded.sources, updated_at = excluded.updated_at`;
}

function lastPerKey(rows: readonly StagedSales[]): readonly StagedSales[] {
  const kept = new Map<string, StagedSales>();
  for (const row of rows) kept.set(`${row.catalog_id}\u0000${row.version}\u0000${row.window}`, row);
  return kept.size === rows.length ? rows : [...kept.values()];
}

/** Records a failed sales read: the reader keeps its last success. */
export async function recordSalesFailure(sql: Sql, input: { source: string; runId: string; error: string; at: Date }): Promise<void> {
  const error = input.error.slice(0, 500);
  await sql`
    insert into sales_readers (name, last_attempt_at, last_error, last_error_at, last_run_id, consecutive_failures)
    values (${input.source}, ${input.at}, ${error}, ${input.at}, ${input.runId}, 1)
    on conflict (name) do update set
      last_attempt_at = excluded.last_attempt_at, last_error = excluded.last_error, last_error_at = excluded.last_error_at,
      last_run_id = excluded.last_run_id, consecutive_failures = sales_readers.consecutive_failures + 1`;
}

type ItemSalesRow = {
  version: string;
  sales_window: SalesWindowName;
  median: string | null;
  mean: string | null;
  min: string | null;
  max: string | null;
  volume: number;
  sources: string[];
};

const emptySales = (): Sales => ({ '24h': null, '7d': null, '30d': null, '90d': null });

/** An item's combined windows per version (versions without any window are absent). */
export async function findItemSales(db: Queryable, catalogId: string): Promise<Map<string, Sales>> {
  const rows = await db<ItemSalesRow[]>`
    select version, sales_window, median::text as median, mean::text as mean, min::text as min, max::text as max, volume, sources
    from item_sales where catalog_id = ${catalogId}`;
  const byVersion = new Map<string, Sales>();
  for (const row of rows) {
    let sales = byVersion.get(row.version);
    if (!sales) byVersion.set(row.version, (sales = emptySales()));
    sales[row.sales_window] = { median: row.median, mean: row.mean, min: row.min, max: row.max, volume: row.volume, sources: row.sources };
  }
  return byVersion;
}

/** The sales of a version, every window present (null where no source has it). */
export const salesOrEmpty = (sales: Sales | undefined): Sales => sales ?? emptySales();

/**
 * docs/design.md §19's liquidity: `listings` the sum of the fresh sources' quantities (null when no fresh
 * source reports one), `sales_7d` the 7-day volume, `days_to_sell` = listings × 7 / sales_7d to one
 * decimal, half-even (integer arithmetic: exact), null without listings or sales.
 */
export function liquidityOf(freshQuantities: readonly (number | null)[], sales7d: SalesWindow | null): Liquidity {
  let listings: number | null = null;
  for (const quantity of freshQuantities) if (quantity !== null) listings = (listings ?? 0) + quantity;
  const sold = sales7d?.volume ?? null;
  return { listings, sales_7d: sold, days_to_sell: listings === null || !sold ? null : tenthsHalfEven(listings * 70, sold) };
}

/** numerator / denominator (positive integers) rounded half-even to one decimal, as text: (listings × 70) / sold tenths. */
function tenthsHalfEven(numerator: number, denominator: number): string {
  const n = BigInt(numerator);
  const d = BigInt(denominator);
  let tenths = n / d;
  const twice = 2n * (n % d);
  if (twice > d || (twice === d && tenths % 2n === 1n)) tenths += 1n;
  return `${tenths / 10n}.${tenths % 10n}`;
}

export const salesReadersSchema = z
  .record(
    z.string(),
    z.object({
      last_success_at: z.string().nullable(),
      last_error: z.string().nullable(),
      last_error_at: z.string().nullable(),
      consecutive_failures: z.number().int(),
      windows_written: z.number().int().describe('Windows that changed in the last successful read'),
      windows_skipped: z.number().int().describe('Windows of the last successful read that could not be read (counted, never fatal)'),
      unknown_names: z.number().int(),
    }),
  )
  .describe(
    'docs/design.md §19: each sales reader (skinport’s sales history, steam’s priceoverview) with its last success and error. Informative: not part of `degraded`',
  );

/** Each sales reader's health row, for GET /v2/status. */
export async function salesReaderStates(db: Queryable): Promise<z.infer<typeof salesReadersSchema>> {
  const rows = await db<
    {
      name: string;
      last_success_at: Date | null;
      last_error: string | null;
      last_error_at: Date | null;
      consecutive_failures: number;
      last_rows_written: number;
      last_rows_skipped: number;
      last_unknown_names: number;
    }[]
  >`select name, last_success_at, last_error, last_error_at, consecutive_failures, last_rows_written, last_rows_skipped, last_unknown_names from sales_readers order by name collate "C"`;
  return Object.fromEntries(
    rows.map((row) => [
      row.name,
      {
        last_success_at: row.last_success_at?.toISOString() ?? null,
        last_error: row.last_error,
        last_error_at: row.last_error_at?.toISOString() ?? null,
        consecutive_failures: row.consecutive_failures,
        windows_written: row.last_rows_written,
        windows_skipped: row.last_rows_skipped,
        unknown_names: row.last_unknown_names,
      },
    ]),
  );
}

export { SALES_WINDOWS };
