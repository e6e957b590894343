import { usdConverter } from '../fx/convert.ts';
import { type CurrencyTable, offeredCurrencies, resolveCurrency } from '../fx/currencies.ts';
import type { FxRates } from '../fx/repository.ts';
import type { Logger } from '../platform/logger.ts';
import { type EncodedBody, encodeSmallBody, etagOf, type LazyEncodedBody, lazyEncodedBody } from '../prices/public-document.ts';
import { type CompatBuilders, type CompatStore, ensureCompatDocuments, findCompatDocument } from './store.ts';
import type { CompatContext, CompatDocumentName } from './types.ts';

/** Redis key (under QUEUE_PREFIX) saying someone read a drop-in format lately: the index pool then builds each snapshot's documents ahead. */
export const compatWantedKey = (queuePrefix: string) => `${queuePrefix}:compat:wanted`;
/** How long one request keeps the documents built ahead (a process renews it at most once a minute). */
export const COMPAT_WANTED_SECONDS = 3_600;

/** Bodies above this are compressed lazily on the thread pool, once per encoding; smaller ones at once. */
const LARGE_BODY_BYTES = 64 * 1024;
/** Answers kept per snapshot (per format, currency and name list); the oldest go first. */
const ANSWER_LIMIT = 256;
const DERIVED_BROTLI_QUALITY = 5;

/** A stored document as a request uses it: parsed once per snapshot. */
export type LoadedCompatDocument = { parsed: unknown; oldestSourceMs: number | null };

/**
 * An API process's view of the drop-in formats' documents (docs/design.md §20): each document of the current
 * snapshot read from the store (Redis) at its first request and parsed once (built first if no process has
 * built it yet: shared/compat/store.ts), and each answer derived from it encoded once per snapshot
 * (`memoKey`). Everything of an older snapshot is dropped when a newer one is seen.
 */
export class CompatDocuments {
  private snapshotId: number | null = null;
  private readonly documents = new Map<CompatDocumentName, Promise<LoadedCompatDocument>>();
  private readonly answers = new Map<string, EncodedBody | LazyEncodedBody>();

  constructor(
    private readonly store: CompatStore,
    private readonly builders: CompatBuilders,
    private readonly log: Logger,
  ) {}

  private forSnapshot(id: number): void {
    if (this.snapshotId === id) return;
    this.snapshotId = id;
    this.documents.clear();
    this.answers.clear();
  }

  /** The document of `snapshot`, built now when nobody has built it (the index pool normally has). */
  document(snapshot: { id: number; createdAt: Date }, name: CompatDocumentName): Promise<LoadedCompatDocument> {
    this.forSnapshot(snapshot.id);
    let loading = this.documents.get(name);
    if (!loading) {
      loading = (async () => {
        let stored = await findCompatDocument(this.store, snapshot.id, name);
        if (!stored) {
          await ensureCompatDocuments(this.store, { id: snapshot.id, created_at: snapshot.createdAt }, this.builders, this.log);
          stored = await findCompatDocument(this.store, snapshot.id, name);
        }
        if (!stored) throw new Error(`compat document ${name} of snapshot ${snapshot.id} could not be built (the snapshot was replaced)`);
        return { parsed: JSON.parse(stored.body.toString('utf8')) as unknown, oldestSourceMs: stored.oldest_source_ms };
      })();
      const attempt = loading;
      // A failed load is forgotten: the next request tries again.
      attempt.catch(() => {
        if (this.documents.get(name) === attempt) this.documents.delete(name);
      });
      this.documents.set(name, attempt);
    }
    return loading;
  }

  /** An answer's encoded body, made once per snapshot and `key` (null: not kept). */
  encoded(snapshotId: number, key: string | null, body: unknown): EncodedBody | LazyEncodedBody {
    this.forSnapshot(snapshotId);
    if (key !== null) {
      const kept = this.answers.get(key);
      if (kept) return kept;
    }
    const json = typeof body === 'string' ? body : JSON.stringify(body);
    const encoded =
      Buffer.byteLength(json) > LARGE_BODY_BYTES
        ? lazyEncodedBody(Buffer.from(json), { brotliQuality: DERIVED_BROTLI_QUALITY, etag: etagOf(json) })
        : encodeSmallBody(json, { brotliQuality: DERIVED_BROTLI_QUALITY });
    if (key !== null) {
      if (this.answers.size >= ANSWER_LIMIT) this.answers.delete(this.answers.keys().next().value!);
      this.answers.set(key, encoded);
    }
    return encoded;
  }
}

const converters = new WeakMap<FxRates, Map<string, (usd: string) => string>>();

/** What handlers convert with (shared/compat/types.ts CompatContext), from the rates of `table`. */
export function compatContext(table: CurrencyTable): CompatContext & { stamp: string } {
  const convert = (usd: string, currency: string): string | null => {
    // Prices are stored in USD: as they are.
    if (currency === 'USD') return usd;
    const resolution = resolveCurrency(table, currency);
    if (resolution.kind !== 'rates') return null;
    let byCurrency = converters.get(resolution.rates);
    if (!byCurrency) converters.set(resolution.rates, (byCurrency = new Map()));
    let converter = byCurrency.get(currency);
    if (!converter) byCurrency.set(currency, (converter = usdConverter(resolution.rates, currency)));
    return converter(usd);
  };
  return { convert, currencies: offeredCurrencies(table), stamp: currencyStamp(table) };
}

const stamps = new WeakMap<CurrencyTable, string>();

/** What distinguishes answers converted at different rates: every rate set `table` holds (one string per table). */
export function currencyStamp(table: CurrencyTable): string {
  let stamp = stamps.get(table);
  if (stamp === undefined) {
    const steam = [...table.steam.values()].map((state) => `${state.currency}=${state.rate}@${state.as_of}`).join(',');
    stamp = `${table.ecb ? `${table.ecb.as_of}@${table.ecb.fetched_at.getTime()}` : 'none'}|${steam}`;
    stamps.set(table, stamp);
  }
  return stamp;
}
