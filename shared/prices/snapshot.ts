import type { Sql } from '../db.ts';
import type { Logger } from '../logger.ts';
import { assemblePriceList, encodeBody, etagOf } from './public-document.ts';
import {
  deleteOlderPriceSnapshots,
  findNewestPriceSnapshotHeader,
  insertPriceSnapshot,
  readSnapshotInputs,
} from './repository.ts';

/** Redis pub/sub channel announcing a new snapshot id to API processes (they also poll). */
export const PRICE_SNAPSHOT_CHANNEL = 'prices:snapshot';
/** Snapshots kept; older ones are deleted by each build. */
export const PRICE_SNAPSHOTS_KEPT = 3;
/**
 * Brotli quality of the stored snapshot. Measured on 40 000 items (README "Prices"): q5 is within
 * 3 % of q9's size in a quarter of its time; q11 saves another 15 % but takes about 25 s.
 */
export const SNAPSHOT_BROTLI_QUALITY = 5;

export type PriceSnapshotBuild = {
  id: number;
  etag: string;
  item_count: number;
  /** True when the newest snapshot already had this exact body: nothing was written or published. */
  unchanged: boolean;
  bytes: { json: number; gzip: number; br: number } | null;
  duration_ms: number;
  /** Where the time went: the query, assembling the JSON (and its hash), compressing, storing (commit included). */
  phases_ms: { query: number; assemble: number; compress: number; store: number };
};

export type BuildPriceSnapshotOptions = {
  /** Called with the new snapshot's id after commit, e.g. `(id) => redis.publish(PRICE_SNAPSHOT_CHANNEL, String(id))`. */
  publish?: (snapshotId: number) => unknown;
  log?: Logger;
  keep?: number;
};

// Serialises builds across processes, so snapshot ids are in the order their inputs were read.
const BUILD_LOCK_KEY = 0x70726963; // "pric"

/**
 * Builds the keyless `GET /v1/prices` body from latest_prices ⨝ catalog_items in one set-based
 * query, stores it with gzip and brotli encodings and its strong ETag (quoted SHA-256 of the JSON),
 * and keeps only the newest few snapshots. The body holds no build time, so an unchanged price set
 * keeps its ETag (clients' If-None-Match keeps answering 304) and no new row is written.
 * Called by the ingest pool after each run.
 */
export async function buildPriceSnapshot(sql: Sql, now: Date, options: BuildPriceSnapshotOptions = {}): Promise<PriceSnapshotBuild> {
  const started = performance.now();
  const phases = { query: 0, assemble: 0, compress: 0, store: 0 };
  let mark = started;
  const lap = (phase: keyof typeof phases) => {
    const at = performance.now();
    phases[phase] = Math.round(at - mark);
    mark = at;
  };
  const result = await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${BUILD_LOCK_KEY})`;
    const rows = await readSnapshotInputs(tx);
    lap('query');
    const list = assemblePriceList(rows);
    const json = JSON.stringify(list);
    const etag = etagOf(json);
    lap('assemble');
    const newest = await findNewestPriceSnapshotHeader(tx);
    if (newest && newest.etag === etag) {
      return { id: newest.id, etag, item_count: list.item_count, unchanged: true, bytes: null };
    }
    const body = await encodeBody(json, { brotliQuality: SNAPSHOT_BROTLI_QUALITY });
    lap('compress');
    const id = await insertPriceSnapshot(tx, {
      created_at: now,
      etag,
      item_count: list.item_count,
      oldest_input_at: list.oldest_input_at ? new Date(list.oldest_input_at) : null,
      body: body.json,
      body_gzip: body.gzip,
      body_br: body.br,
    });
    await deleteOlderPriceSnapshots(tx, options.keep ?? PRICE_SNAPSHOTS_KEPT);
    return {
      id,
      etag,
      item_count: list.item_count,
      unchanged: false,
      bytes: { json: body.json.length, gzip: body.gzip.length, br: body.br.length },
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
