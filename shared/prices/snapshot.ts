import type { Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { etagOf, type PriceListItemObserver, PriceListJsonBuilder } from './public-document.ts';
import { deleteOlderPriceSnapshots, findNewestPriceSnapshotHeader, findSourceClocks, insertPriceSnapshot, streamSnapshotInputs } from './repository.ts';

/** Redis pub/sub channel announcing a new snapshot id to API processes (they also poll). */
export const PRICE_SNAPSHOT_CHANNEL = 'prices:snapshot';
/** Snapshots kept; older ones are deleted by each build. */
export const PRICE_SNAPSHOTS_KEPT = 3;
/**
 * Brotli quality of the full list, compressed once per snapshot by each API process that serves it
 * (on the thread pool). Measured on the nine-source list of ~244 000 prices (docs/performance.md "bench:snapshot"): q5
 * 2.86 MiB in ~0.3 s, q7 2.72 MiB (-5 %) in ~0.47 s, q8 -6.6 % in ~0.65 s. (On the three-source list
 * q5 was within 3 % of q9, and q11 saved another 15 % in about 25 s.)
 */
export const SNAPSHOT_BROTLI_QUALITY = 7;
/** Rows per cursor fetch while building a snapshot. */
const SNAPSHOT_ROWS_PER_FETCH = 5_000;

/**
 * The `prices.snapshot` job for a request made at `at`: requests within one interval share the
 * interval's job id and run at its end, so builds are coalesced to at most one per interval and a
 * run's changes reach the keyless list within one interval.
 */
export function snapshotJob(at: Date, intervalMs: number): { jobId: string; delay: number } {
  const slot = Math.floor(at.getTime() / intervalMs);
  return { jobId: `snapshot-${slot}`, delay: (slot + 1) * intervalMs - at.getTime() };
}

export type PriceSnapshotBuild = {
  id: number;
  etag: string;
  item_count: number;
  /** True when the newest snapshot already had this exact body: nothing was written or published. */
  unchanged: boolean;
  bytes: { json: number } | null;
  duration_ms: number;
  /** Where the time went: reading the rows and turning each item into JSON, joining the text and hashing it, storing (commit included). */
  phases_ms: { query: number; assemble: number; store: number };
};

export type BuildPriceSnapshotOptions = {
  /** Called with the new snapshot's id after commit, e.g. `(id) => redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id))`. */
  publish?: (snapshotId: number) => unknown;
  log?: Logger;
  keep?: number;
  /** Sees each item of the list with its rows as the build reads them (the drop-in formats gather their prices here). */
  onItem?: PriceListItemObserver;
};

// Serialises builds across processes, so snapshot ids are in the order their inputs were read.
const BUILD_LOCK_KEY = 0x70726963; // "pric"

/**
 * Builds the keyless `GET /v1/prices` body from latest_prices ⨝ catalog_items in one set-based
 * query, stores it with its strong ETag (quoted SHA-256 of the JSON),
 * and keeps only the newest few snapshots. The body holds no build time, so an unchanged price set
 * keeps its ETag (clients' If-None-Match keeps answering 304) and no new row is written.
 * Called by the ingest pool after each run.
 */
export async function buildPriceSnapshot(sql: Sql, now: Date, options: BuildPriceSnapshotOptions = {}): Promise<PriceSnapshotBuild> {
  const started = performance.now();
  const phases = { query: 0, assemble: 0, store: 0 };
  let mark = started;
  const lap = (phase: keyof typeof phases) => {
    const at = performance.now();
    phases[phase] = Math.round(at - mark);
    mark = at;
  };
  const result = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${BUILD_LOCK_KEY})`;
    // Rows are read through a cursor and turned into each item's JSON as they come: the build never
    // holds every row or every item object (~110 000 rows made a worker's RSS peak ~250 MB higher).
    // Freshness (and so the consensus) as of this build (docs/design.md §13), by the rule of GET /health.
    const builder = new PriceListJsonBuilder({ now, sources: await findSourceClocks(tx) }, options.onItem);
    await streamSnapshotInputs(tx, SNAPSHOT_ROWS_PER_FETCH, (rows) => builder.add(rows));
    lap('query');
    const list = builder.finish();
    const json = list.json;
    const etag = etagOf(json);
    lap('assemble');
    const newest = await findNewestPriceSnapshotHeader(tx);
    if (newest && newest.etag === etag) {
      return { id: newest.id, etag, item_count: list.item_count, unchanged: true, bytes: null };
    }
    // Stored uncompressed: compressing 13 MB twice cost ~0.4 s of CPU per build whether or not
    // anyone downloads the list; API processes compress a snapshot when they first serve it.
    const body = json;
    const id = await insertPriceSnapshot(tx, {
      created_at: now,
      etag,
      item_count: list.item_count,
      oldest_input_at: list.oldest_input_at ? new Date(list.oldest_input_at) : null,
      body,
      body_gzip: null,
      body_br: null,
    });
    await deleteOlderPriceSnapshots(tx, options.keep ?? PRICE_SNAPSHOTS_KEPT);
    return {
      id,
      etag,
      item_count: list.item_count,
      unchanged: false,
      bytes: { json: body.length },
    };
  });
  lap('store');
  const build: PriceSnapshotBuild = { ...result, duration_ms: Math.round(performance.now() - started), phases_ms: phases };
  options.log?.info(
    { snapshot_id: build.id, items: build.item_count, unchanged: build.unchanged, bytes: build.bytes, ms: build.duration_ms, phases_ms: phases },
    'price snapshot built',
  );
  if (!build.unchanged && options.publish) {
    try {
      await options.publish(build.id);
    } catch (error) {
      // API processes also poll for new snapshots, so a lost announcement only delays them.
      options.log?.warn({ err: (error as Error).message, snapshot_id: build.id }, 'could not announce the price snapshot');
    }
  }
  return build;
}
