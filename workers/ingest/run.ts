import { type FxRates, findLatestRates } from '../../shared/fx/repository.ts';
import { recordSeenIcons } from '../../shared/media/images/item-icons.ts';
import type { Sql } from '../../shared/platform/db.ts';
import type { WorkerResources } from '../../shared/platform/resources.ts';
import {
  type CatalogNameMap,
  claimIngestRun,
  type ListingUpdate,
  loadCatalogNameMap,
  mapToCatalog,
  recordIngestFailure,
  type StagedObservation,
  writeIngestRun,
} from '../../shared/prices/ingest.ts';
import { mapSalesToCatalog, writeSalesWindows } from '../../shared/prices/sales.ts';
import type { PriceStreamRelay } from '../../shared/prices/stream.ts';
import { createRequestBudget } from '../../shared/sources/budget.ts';
import { redisSourceCursor } from '../../shared/sources/cursor.ts';
import { namesToRead } from '../../shared/sources/demand.ts';
import { sourceApiKey, sourceSettings } from '../../shared/sources/settings.ts';
import { type SourceAdapter, type SourceFetchResult, SourceRateLimitedError } from '../../shared/sources/types.ts';
import { learnNewItems } from './new-items.ts';

const REQUEST_TIMEOUT_MS = 15_000;
const CATALOG_CACHE_MS = 60_000;

export type IngestOutcome =
  | {
      status: 'succeeded';
      runId: string;
      received: number;
      written: number;
      repeated: number;
      changed: number;
      skipped: number;
      unknownNames: number;
      ms: number;
    }
  | { status: 'failed'; runId: string; error: string }
  | { status: 'duplicate' };

export type IngestDeps = WorkerResources & {
  /** Asks for the keyless price snapshot to be rebuilt (the index pool does it). */
  requestSnapshot?: (runId: string) => Promise<void>;
  /** Asks for the market index of this source to be calculated after a successful run (index pool). */
  requestIndex?: (runId: string) => Promise<void>;
  /** Relays each committed run's price stream entries to Redis right after its commit (shared/prices/stream.ts). */
  relay?: PriceStreamRelay;
};

// Per database handle: one process may ingest into several databases (the test suite does).
const catalogCaches = new WeakMap<Sql, { map: CatalogNameMap; loadedAt: number }>();

export async function catalogNames(sql: Sql): Promise<CatalogNameMap> {
  let cached = catalogCaches.get(sql);
  if (!cached || Date.now() - cached.loadedAt > CATALOG_CACHE_MS || cached.map.size === 0) {
    cached = { map: await loadCatalogNameMap(sql), loadedAt: Date.now() };
    catalogCaches.set(sql, cached);
  }
  return cached.map;
}

/**
 * Per source, what this process last wrote for each item and version: price, median, bid, 7-day
 * volume, quantity and source time. A row identical to it (source time included) is dropped before
 * it is staged: the stored latest already holds that observation or a newer one (latest prices only
 * move forward), so the write's own dedupe would drop it anyway, after copying it to Postgres and
 * comparing. Skinport repeats unchanged rows with the same `updated_at`, so a steady run stages only
 * the ~10 % that moved. Filled only after a run commits; another writer (a second worker) only makes
 * the stored latest newer, which keeps the skip exact. Forgotten every LAST_WRITTEN_TTL_MS, so a
 * change made behind the pool's back (a latest price deleted by hand) is written again within that time.
 *
 * A whole-market listing (SourceAdapter.listsWholeMarket) has no per-row time: the source time is
 * left out of the comparison (the run's listing confirms every listed row at once), and the keys
 * remembered but missing from this listing are the ones that left it. Another worker's listing may
 * have marked rows as gone in between, so the memory is used only while the source's last success
 * is this process's own last write.
 */
const LAST_WRITTEN_TTL_MS = 10 * 60_000;
/**
 * Per source: a row's key (`keyOf`) → a 53-bit hash of what was written (`fingerprintOf`). One
 * flat map of a key and a number per row: nine sources keep ~244 000 rows, and a map per item with
 * an object per row cost ~4× the memory (a signature string per row, ~2×). Two different rows share a
 * fingerprint with probability 2^-53: such a row would be skipped as unchanged until the memory is
 * forgotten (LAST_WRITTEN_TTL_MS), then written.
 */
type SourceMemory = { since: number; lastWriteAt: number; rows: Map<string, number> };
// Per database handle, then per source: a memory of one database says nothing about another's rows.
const memories = new WeakMap<Sql, Map<string, SourceMemory>>();
function memoriesOf(sql: Sql): Map<string, SourceMemory> {
  let byName = memories.get(sql);
  if (!byName) memories.set(sql, (byName = new Map()));
  return byName;
}

/**
 * A row's key: its catalog id for the `default` version (the catalog's own string, shared with the
 * catalog name map, so most keys cost no string of their own), else `<catalog id>\0<version>`.
 */
const keyOf = (row: { catalog_id: string; version: string }) => (row.version === 'default' ? row.catalog_id : `${row.catalog_id}\u0000${row.version}`);

/**
 * What the memory compares: price, median, bid, volume, quantity, an original price (skinbaron's EUR)
 * where there is one, and the source time unless the source lists the whole market (the run's listing
 * confirms every listed row at once), joined with
 * `\u0001` (which no decimal string or number contains; null is an empty field) and hashed twice
 * (MurmurHash3, two seeds) into 32 + 21 bits: an integer a JS number holds exactly.
 */
function fingerprintOf(row: StagedObservation, timed: boolean): number {
  // The original price (skinbaron's EUR) only where there is one, so the other sources' signatures stay as they were.
  const original = row.original_price == null ? '' : `\u0001${row.original_price}\u0001${row.original_currency ?? ''}`;
  const signature = `${row.price}\u0001${row.median_price ?? ''}\u0001${row.bid ?? ''}\u0001${row.volume_7d ?? ''}\u0001${row.quantity ?? ''}\u0001${timed ? row.source_time.getTime() : ''}${original}`;
  return Bun.hash.murmur32v3(signature, 0x9e3779b9) * 2 ** 21 + (Bun.hash.murmur32v3(signature, 0x85ebca6b) >>> 11);
}

/** This process's memory of a source, if it may still be trusted. */
async function memoryOf(sql: Sql, adapter: SourceAdapter): Promise<SourceMemory | undefined> {
  const lastWritten = memoriesOf(sql);
  const seen = lastWritten.get(adapter.name);
  if (!seen || performance.now() - seen.since > LAST_WRITTEN_TTL_MS) {
    lastWritten.delete(adapter.name);
    return undefined;
  }
  if (adapter.listsWholeMarket) {
    const [row] = await sql<{ last_success_at: Date | null }[]>`select last_success_at from price_sources where name = ${adapter.name}`;
    if (row?.last_success_at?.getTime() !== seen.lastWriteAt) {
      lastWritten.delete(adapter.name);
      return undefined;
    }
  }
  return seen;
}

/**
 * The rows that differ from what this process last wrote for the source (all of them without a
 * memory), and for a whole-market listing the update that goes with them: complete (every row is
 * staged) or the remembered keys this listing no longer has.
 */
function unseenRows(adapter: SourceAdapter, seen: SourceMemory | undefined, rows: StagedObservation[]): { rows: StagedObservation[]; listing?: ListingUpdate } {
  if (!seen) return { rows, listing: adapter.listsWholeMarket ? { complete: true, delisted: [] } : undefined };
  const timed = !adapter.listsWholeMarket;
  const unseen = rows.filter((row) => seen.rows.get(keyOf(row)) !== fingerprintOf(row, timed));
  if (timed) return { rows: unseen };
  const listed = new Set(rows.map(keyOf));
  const delisted: { catalog_id: string; version: string }[] = [];
  for (const key of seen.rows.keys()) {
    if (listed.has(key)) continue;
    const separator = key.indexOf('\u0000');
    delisted.push(separator < 0 ? { catalog_id: key, version: 'default' } : { catalog_id: key.slice(0, separator), version: key.slice(separator + 1) });
  }
  return { rows: unseen, listing: { complete: false, delisted } };
}

/** A flat copy of a version's key: a concatenation keeps its parts alive, and a part may be a slice of an upstream body. */
const detached = (key: string) => (key.includes('\u0000') ? Buffer.from(key, 'utf8').toString('utf8') : key);

function rememberRows(sql: Sql, adapter: SourceAdapter, written: { rows: StagedObservation[]; listing?: ListingUpdate }, writtenAt: Date): void {
  const lastWritten = memoriesOf(sql);
  let seen = lastWritten.get(adapter.name);
  if (!seen) lastWritten.set(adapter.name, (seen = { since: performance.now(), lastWriteAt: 0, rows: new Map() }));
  seen.lastWriteAt = writtenAt.getTime();
  const timed = !adapter.listsWholeMarket;
  for (const key of written.listing?.delisted ?? []) seen.rows.delete(keyOf(key));
  for (const row of written.rows) seen.rows.set(detached(keyOf(row)), fingerprintOf(row, timed));
}

/**
 * One scheduled run of one source: claim the run's slot (a second worker with the same slot does
 * nothing), respect the source's request budget and any Retry-After block, fetch, map names to the
 * catalog, and write set-based. Failures are recorded on the run and the source, never thrown, so
 * the source turns stale by itself when it keeps failing.
 */
export async function runSourceIngest(deps: IngestDeps, adapter: SourceAdapter, scheduledAt: Date): Promise<IngestOutcome> {
  const settings = sourceSettings(deps.config, adapter);
  const started = deps.now();
  const intervalMs = settings.intervalSeconds * 1000;
  const slot = Math.floor(scheduledAt.getTime() / intervalMs);
  const runId = await claimIngestRun(deps.sql, adapter.name, slot, new Date(slot * intervalMs), started);
  if (!runId) {
    deps.log.info({ source: adapter.name, slot }, 'run already claimed by another worker');
    return { status: 'duplicate' };
  }
  const log = deps.log.child({ source: adapter.name, run_id: runId });
  const budget = createRequestBudget(deps.redis, adapter.name, settings.budget, { now: deps.now });
  const fail = async (error: string): Promise<IngestOutcome> => {
    log.warn({ error }, 'ingest run failed');
    await recordIngestFailure(deps.sql, { runId, source: adapter.name, error, at: deps.now(), staleAfterSeconds: settings.staleAfterSeconds });
    return { status: 'failed', runId, error };
  };
  try {
    const blockedMs = await budget.blockedFor();
    if (blockedMs > 0) return fail(`rate-limited upstream: waiting ${Math.ceil(blockedMs / 1000)} s (Retry-After)`);
    // docs/design.md §14: a source priced in another currency is stored in USD at the newest stored rates;
    // without any, the run fails (the source turns stale) and nothing is stored, never EUR as USD.
    let rates: FxRates | undefined;
    if (adapter.priceCurrency) {
      rates = (await findLatestRates(deps.sql)) ?? undefined;
      if (!rates) return fail(`no exchange rates stored yet: ${adapter.name} prices in ${adapter.priceCurrency} cannot be converted to USD`);
    }
    // Names asked about first, then the stalest (shared/sources/demand.ts).
    const names = adapter.needsNames ? await namesToRead({ ...deps, queuePrefix: deps.config.QUEUE_PREFIX }, adapter.name, settings.batchSize) : [];
    let fetched: SourceFetchResult;
    let interruption: string | null = null;
    const fetchStartedAt = performance.now();
    try {
      fetched = await adapter.fetchSnapshot({
        baseUrl: settings.baseUrl,
        log,
        timeoutMs: REQUEST_TIMEOUT_MS,
        acquire: () => budget.acquire(),
        names,
        cursor: redisSourceCursor(deps.redis, deps.config.QUEUE_PREFIX, adapter.name),
        now: deps.now,
        apiKey: sourceApiKey(deps.config, adapter.name),
        rates,
        ...settings.paging,
      });
    } catch (error) {
      if (error instanceof SourceRateLimitedError && error.origin === 'upstream') {
        await budget.blockUntil(new Date(deps.now().getTime() + error.retryAfterMs)).catch(() => undefined);
      }
      // What a per-item source collected before it was stopped still lands; the run counts as failed.
      const partial = (error as { partial?: SourceFetchResult }).partial;
      if (!partial || partial.observations.length === 0) throw error;
      fetched = partial;
      interruption = error instanceof Error ? error.message : String(error);
    }
    // A body of nothing but unreadable rows (wrong types throughout) is an upstream failure, not an
    // empty market: the source turns stale instead of staying fresh with nothing in it.
    if (fetched.observations.length === 0 && fetched.skipped > 0) {
      return fail(`every row of the upstream body was malformed (${fetched.skipped} skipped)`);
    }
    const fetchedAt = performance.now();
    const mapped = mapToCatalog(fetched.observations, await catalogNames(deps.sql));
    if (mapped.unknownNames.length > 0) {
      log.warn({ unknown_names: mapped.unknownNames.length, sample: mapped.unknownNames.slice(0, 5) }, 'upstream names not in the catalog');
    }
    // A listing cut short (an interrupted fetch) is not the whole market: nothing is marked as gone.
    const memory = await memoryOf(deps.sql, adapter);
    const unseen = interruption ? { rows: mapped.staged } : unseenRows(adapter, memory, mapped.staged);
    const rows = unseen.rows;
    const mappedAt = performance.now();
    const ingestedAt = deps.now();
    const result = await writeIngestRun(deps.sql, {
      runId,
      source: adapter.name,
      rows,
      ingestedAt,
      staleAfterSeconds: settings.staleAfterSeconds,
      received: fetched.observations.length + fetched.skipped,
      skipped: fetched.skipped + mapped.unknownVersions,
      unknownNames: mapped.unknownNames.length + fetched.unknown,
      listing: unseen.listing,
      relay: deps.relay,
    });
    // docs/design.md §19: the item images steam's search rows carry (Steam has no phase versions: `default`).
    if (fetched.icons && fetched.icons.length > 0) {
      const icons = fetched.icons.map((icon) => ({ ...icon, version: 'default' }));
      await recordSeenIcons(deps.sql, icons, ingestedAt).catch((error: Error) =>
        log.warn({ err: error.message, icons: icons.length }, 'could not record item icons; the next run will'),
      );
    }
    rememberRows(deps.sql, adapter, unseen, ingestedAt);
    // docs/design.md §19: sales windows the fetch read (steam's priceoverview: 24 h) are their own write, after
    // the prices: a failure there is logged and leaves the prices written.
    if (fetched.sales && fetched.sales.length > 0) {
      const sales = mapSalesToCatalog(fetched.sales, await catalogNames(deps.sql));
      await writeSalesWindows(deps.sql, {
        source: adapter.name,
        runId,
        rows: sales.staged,
        ingestedAt,
        skipped: sales.unknownVersions,
        unknownNames: sales.unknownNames,
      }).catch((error: Error) => log.warn({ err: error.message }, 'could not write sales windows'));
    }
    const writtenAt = performance.now();
    // docs/design.md §19: names the catalog lacks, per source; one seen on two sources (or steam) becomes a
    // provisional item, and the name map is reloaded so the next run prices it.
    if (await learnNewItems(deps.sql, { source: adapter.name, names: mapped.unknownNames, at: ingestedAt, log })) catalogCaches.delete(deps.sql);
    // The keyless price list is rebuilt from a snapshot after each run that changed a price.
    if (result.changed > 0 && deps.requestSnapshot) {
      await deps.requestSnapshot(runId).catch((error: Error) => log.warn({ err: error.message }, 'could not request a price snapshot; the next run will'));
    }
    if (interruption) {
      log.warn({ written: result.written, error: interruption }, 'ingest run interrupted; kept what was fetched');
      return fail(interruption);
    }
    // Every successful run is a period of the market index, changed prices or not.
    if (deps.requestIndex) {
      await deps.requestIndex(runId).catch((error: Error) => log.warn({ err: error.message }, 'could not request the market index; the next run will'));
    }
    const outcome = {
      status: 'succeeded' as const,
      runId,
      received: fetched.observations.length + fetched.skipped,
      written: result.written,
      repeated: result.repeated,
      changed: result.changed,
      skipped: fetched.skipped + mapped.unknownVersions,
      unknownNames: mapped.unknownNames.length + fetched.unknown,
      ms: deps.now().getTime() - started.getTime(),
    };
    // Where the run went: claim and budget, the upstream request and parse, catalog mapping (and the
    // skip of rows this process wrote before), the write (its own steps in `timings`), job requests.
    const phases = {
      fetch: Math.round(fetchedAt - fetchStartedAt),
      map: Math.round(mappedAt - fetchedAt),
      write: Math.round(writtenAt - mappedAt),
      requests: Math.round(performance.now() - writtenAt),
    };
    log.info({ ...outcome, unchanged_skipped: mapped.staged.length - rows.length, phases_ms: phases, timings: result.timings }, 'ingest run done');
    return outcome;
  } catch (error) {
    return fail(error instanceof Error ? error.message : String(error));
  }
}
