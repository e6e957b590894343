/**
 * CSFloat in the market simulator: the listings, paged by an opaque cursor.
 *
 *   /csfloat/api/v1/listings?limit=…&cursor=…      {data, cursor}, integer cents, limit ≤ 1000
 *
 * Every listing of the market is laid out once at start, in one seeded shuffled order (pages mix
 * items; new items are never listed); a Doppler's listings always carry a phase. A listing keeps its
 * price and created_at until its item's market moves. Money: integer cents.
 */
import { mulberry32 } from '../../../shared/util/random.ts';
import { type Entry, EXTERIORS, exteriorOf, pinFor } from './market.ts';
import { mix, unit } from './noise.ts';
import type { Handler, SimulatorState, Upstream } from './types.ts';

function create(state: SimulatorState): Handler {
  const { modes, market } = state;
  const { seed, now, bucketOf, bucketMs, csfloatEntries, ask, changeBucket, generatedQuantity } = market;

  // Every listing of the market as [entry index, slot], in one seeded shuffled order (pages mix items).
  const listingSlots: [number, number][] = [];
  for (const [index, entry] of csfloatEntries.entries()) {
    let count: number;
    if (entry.fixed) count = entry.fixed.listings?.length ?? (pinFor(entry.fixed, 'csfloat') === null ? 0 : (entry.fixed.quantity ?? 1 + (entry.hash % 4)));
    else count = generatedQuantity(entry, 'csfloat', Math.round(entry.base * 100));
    for (let slot = 0; slot < count; slot += 1) listingSlots.push([index, slot]);
  }
  const random = mulberry32(seed ^ 0xc5f10a7);
  for (let i = listingSlots.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [listingSlots[i], listingSlots[j]] = [listingSlots[j]!, listingSlots[i]!];
  }

  function listingCents(entry: Entry, slot: number, bucket: number): number {
    if (entry.fixed?.listings) return entry.fixed.listings[slot]!;
    if (entry.fixed) return pinFor(entry.fixed, 'csfloat')!.cents!;
    const cheapest = ask(entry, 'csfloat', bucket)!.cents;
    return slot === 0 ? cheapest : Math.round(cheapest * (1 + 0.015 * slot + 0.05 * unit(mix(entry.hash, slot, bucket))));
  }

  function listing(position: number, bucket: number, corrupt: boolean, wrongTypes = false): Record<string, unknown> {
    const [entryIndex, slot] = listingSlots[position]!;
    const entry = csfloatEntries[entryIndex]!;
    const h = mix(entry.hash, slot, 11);
    // A market that has not moved keeps its listings as they were (price and created_at), like skinport's
    // rows keep their updated_at: only about one item in ten is relisted per bucket.
    const moved = entry.fixed ? bucket : changeBucket(entry, 'csfloat', bucket);
    const createdMs = moved * bucketMs - (h % 21_600) * 1000 - (mix(h, 1) % 1000);
    const iso = new Date(createdMs).toISOString().replace('Z', `${String(mix(h, 2) % 1000).padStart(3, '0')}Z`);
    const exterior = exteriorOf(entry.name);
    const item: Record<string, unknown> = {
      asset_id: String(20_000_000_000 + (h % 10_000_000_000)),
      def_index: entry.item.definition_index ?? 0,
      paint_index: entry.item.paint_index ?? 0,
      paint_seed: entry.item.paint_index != null ? mix(h, 3) % 1001 : 0,
      is_stattrak: entry.item.stattrak ?? entry.name.includes('StatTrak™'),
      is_souvenir: entry.item.souvenir ?? entry.name.startsWith('Souvenir '),
      market_hash_name: entry.name,
      item_name: entry.name.replace(/\s*\([^()]+\)\s*$/, ''),
      tradable: 0,
    };
    if (exterior) {
      const [low, high] = EXTERIORS[exterior]!.wear;
      item.float_value = low + (high - low) * unit(mix(h, 4));
      item.wear_name = exterior;
    }
    if (entry.label) item.phase = entry.label;
    const result: Record<string, unknown> = {
      id: String(700_000_000_000_000_000n + BigInt(position)),
      created_at: iso,
      type: 'buy_now',
      price: listingCents(entry, slot, moved),
      state: 'listed',
      seller: { steam_id: String(76_561_198_000_000_000n + BigInt(mix(h, 5) % 1_000_000)), online: true, stall_public: true },
      item,
    };
    if (wrongTypes) {
      result.price = position % 2 === 0 ? { amount: result.price } : true;
      if (item.float_value !== undefined) item.float_value = String(item.float_value);
      item.paint_seed = String(item.paint_seed);
    }
    if (corrupt) {
      const kind = Math.floor(position / 3) % 3;
      if (kind === 0) delete item.market_hash_name;
      else if (kind === 1) result.price = String(result.price);
      else result.price = -(result.price as number);
    }
    return result;
  }

  function csfloat(url: URL): Response {
    const limitText = url.searchParams.get('limit') ?? '50';
    const limit = Number(limitText);
    if (!/^[0-9]+$/.test(limitText) || limit < 1) return Response.json({ code: 4, message: 'invalid limit' }, { status: 400 });
    const pageSize = Math.min(limit, 1000);
    const cursor = url.searchParams.get('cursor');
    let offset = 0;
    if (cursor) {
      const decoded = /^o([0-9]+)$/.exec(Buffer.from(cursor, 'base64url').toString());
      if (!decoded) return Response.json({ code: 4, message: 'invalid cursor' }, { status: 400 });
      offset = Number(decoded[1]);
    }
    const bucket = bucketOf(now());
    const partial = modes.csfloat === 'partial';
    const wrongTypes = modes.csfloat === 'wrong_types';
    const end = Math.min(offset + pageSize, listingSlots.length);
    const data: Record<string, unknown>[] = [];
    for (let position = offset; position < end; position += 1) data.push(listing(position, bucket, partial && position % 3 === 1, wrongTypes));
    const body: Record<string, unknown> = { data };
    if (end < listingSlots.length) body.cursor = Buffer.from(`o${end}`).toString('base64url');
    return Response.json(body);
  }

  return (_request, url) => csfloat(url);
}

export const CSFLOAT: Upstream = {
  source: 'csfloat',
  routes: { '/csfloat/api/v1/listings': 'csfloat' },
  malformed: { csfloat: '{"data":[{"id":"1","price":12' },
  rateLimited: '{"code":20,"message":"too many requests, try again later"}',
  create,
};
