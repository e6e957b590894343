/**
 * Skinport in the market simulator: the items list and the sales history (skinport-sales.ts), both
 * brotli-compressed (a client must send `Accept-Encoding: br` for the items).
 *
 *   /skinport/v1/items?app_id=730&currency=USD     bare array, one row per (name, version), brotli
 *   /skinport/v1/sales/history?app_id=730&currency=USD  bare array of sales windows (skinport-sales.ts), brotli
 *
 * Money: JSON numbers, two decimals as literal text (`2.30`); a pin verbatim (`0.7`). The items body
 * is built once per bucket in `ok`, the sales history once per hour.
 */
import zlib from 'node:zlib';
import { slug, wrongType } from './format.ts';
import { type Entry, quoteFromCents } from './market.ts';
import { mix, unit } from './noise.ts';
import { skinportSalesChunks } from './skinport-sales.ts';
import type { Handler, SimulatorState, Upstream } from './types.ts';

const CREATED_EPOCH = 1_535_988_253;

function create(state: SimulatorState): Handler {
  const { modes, market } = state;
  const { now, bucketOf, bucketMs, defaults, newItems, ask, changeBucket, generatedQuantity } = market;

  function skinportRow(entry: Entry, bucket: number, index: number, corrupt: boolean, wrongTypes = false): string {
    const quote = ask(entry, 'skinport', bucket);
    let quantity: number;
    let min: string | null = null;
    let max: string | null = null;
    let mean: string | null = null;
    let median: string | null = null;
    let suggested: string;
    const moved = entry.fixed ? bucket : changeBucket(entry, 'skinport', bucket);
    const h = mix(entry.hash, moved);
    if (entry.fixed) {
      quantity = quote ? Math.max(1, entry.fixed.quantity ?? 1 + (entry.hash % 50)) : 0;
      suggested = quote?.text ?? entry.fixed.median ?? '1.00';
      if (quote) {
        min = max = mean = quote.text;
        median = entry.fixed.median === undefined ? quote.text : entry.fixed.median;
      }
    } else {
      const cents = quote?.cents ?? 100;
      quantity = quote ? generatedQuantity(entry, 'skinport', cents) : 0;
      suggested = quoteFromCents(Math.round(cents * (1.05 + 0.2 * unit(mix(h, 4))))).text;
      if (quote && quantity > 0) {
        min = quote.text;
        if (quantity === 1) max = mean = median = quote.text;
        else {
          const medianCents = Math.round(cents * (1.02 + 0.25 * unit(mix(h, 1))));
          const meanCents = Math.round(medianCents * (1 + 0.08 * unit(mix(h, 2))));
          median = quoteFromCents(medianCents).text;
          mean = quoteFromCents(meanCents).text;
          max = quoteFromCents(Math.round(meanCents * (1.2 + 2 * unit(mix(h, 3))))).text;
        }
      }
    }
    let minField = min ?? 'null';
    let nameField = `"market_hash_name":${JSON.stringify(entry.name)},`;
    let quantityField = String(quantity);
    if (wrongTypes) {
      const wrong = (value: string | null) => (value === null ? null : wrongType(value, index));
      [suggested, max, mean, median] = [wrong(suggested)!, wrong(max), wrong(mean), wrong(median)];
      minField = wrong(min) ?? 'null';
      quantityField = `"${quantity}"`;
    }
    if (corrupt) {
      const kind = Math.floor(index / 3) % 3;
      if (kind === 0) nameField = '';
      else if (kind === 1) minField = `"${min ?? '1.00'}"`;
      else minField = `-${min ?? '1.00'}`;
    }
    const itemSlug = slug(entry.name);
    const version = entry.label ? JSON.stringify(entry.label) : 'null';
    return (
      `{${nameField}"version":${version},"currency":"USD","suggested_price":${suggested},` +
      `"item_page":${JSON.stringify(`https://skinport.com/item/${itemSlug}${entry.label ? `-${slug(entry.label)}` : ''}`)},` +
      `"market_page":${JSON.stringify(`https://skinport.com/market?item=${encodeURIComponent(entry.name)}&cat=${encodeURIComponent(entry.item.market_hash_name.split(' | ')[0] ?? '')}`)},` +
      `"min_price":${minField},"max_price":${max ?? 'null'},"mean_price":${mean ?? 'null'},"median_price":${median ?? 'null'},` +
      `"quantity":${quantityField},"created_at":${CREATED_EPOCH + (entry.hash % 150_000_000)},"updated_at":${Math.floor((moved * bucketMs) / 1000)}}`
    );
  }

  let skinportCache: { bucket: number; body: Uint8Array } | undefined;

  function skinportBody(partial: boolean, wrongTypes: boolean): string {
    const bucket = bucketOf(now());
    const rows: string[] = [];
    for (const entry of defaults) {
      if (!newItems.isListed(entry.item, bucket)) continue;
      rows.push(skinportRow(entry, bucket, rows.length, partial && rows.length % 3 === 1, wrongTypes));
      for (const phase of entry.phaseEntries) rows.push(skinportRow(phase, bucket, rows.length, partial && rows.length % 3 === 1, wrongTypes));
    }
    return `[${rows.join(',')}]`;
  }

  function skinport(request: Request, url: URL): Response {
    if (url.searchParams.get('app_id') !== '730' || url.searchParams.get('currency') !== 'USD') {
      return Response.json({ errors: [{ id: 'validation_error', message: 'app_id must be 730 and currency USD in this simulator' }] }, { status: 400 });
    }
    if (!(request.headers.get('accept-encoding') ?? '').includes('br')) {
      return Response.json({ errors: [{ id: 'accept_encoding_required', message: 'Accept-Encoding: br is required' }] }, { status: 406 });
    }
    const partial = modes.skinport === 'partial';
    const wrongTypes = modes.skinport === 'wrong_types';
    const bucket = bucketOf(now());
    let body: Uint8Array;
    if (!partial && !wrongTypes && skinportCache?.bucket === bucket) body = skinportCache.body;
    else {
      body = zlib.brotliCompressSync(Buffer.from(skinportBody(partial, wrongTypes)), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      if (!partial && !wrongTypes) skinportCache = { bucket, body };
    }
    return new Response(body, {
      headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'br', 'cache-control': 'public, max-age=300' },
    });
  }

  /** docs/design.md §19: skinport's sales history (skinport-sales.ts), over what skinport lists, one body per hour and mode. */
  let salesCache: { hour: number; body: Uint8Array } | undefined;
  async function skinportSales(url: URL): Promise<Response> {
    if (url.searchParams.get('app_id') !== '730' || url.searchParams.get('currency') !== 'USD') {
      return Response.json({ errors: [{ id: 'validation_error', message: 'app_id must be 730 and currency USD in this simulator' }] }, { status: 400 });
    }
    const partial = modes.skinport === 'partial';
    const wrongTypes = modes.skinport === 'wrong_types';
    const hour = Math.floor(now().getTime() / 3_600_000);
    let body: Uint8Array;
    if (!partial && !wrongTypes && salesCache?.hour === hour) body = salesCache.body;
    else {
      const bucket = bucketOf(now());
      // New items (options.newItems) only once they are on the market; the body is kept for the hour, as upstream's.
      const entries = defaults.filter((entry) => newItems.isListed(entry.item, bucket)).flatMap((entry) => [entry, ...entry.phaseEntries]);
      // Compressed as it is written, a thousand rows at a time: the whole text is never held (bench:idle).
      const compressor = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      const parts: Buffer[] = [];
      compressor.on('data', (chunk: Buffer) => parts.push(chunk));
      const finished = new Promise<void>((resolve, reject) => {
        compressor.on('end', resolve);
        compressor.on('error', reject);
      });
      for (const chunk of skinportSalesChunks(entries, (entry) => ask(entry as Entry, 'skinport', bucket)?.cents ?? null, {
        hour,
        partial,
        wrongTypes,
        slug,
      })) {
        if (!compressor.write(chunk)) await new Promise((resolve) => compressor.once('drain', resolve));
      }
      compressor.end();
      await finished;
      body = Buffer.concat(parts);
      if (!partial && !wrongTypes) salesCache = { hour, body };
    }
    return new Response(body, {
      headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'br', 'cache-control': 'public, max-age=3600' },
    });
  }

  return (request, url, endpoint) => (endpoint === 'skinport-sales' ? skinportSales(url) : skinport(request, url));
}

export const SKINPORT: Upstream = {
  source: 'skinport',
  routes: { '/skinport/v1/items': 'skinport', '/skinport/v1/sales/history': 'skinport-sales' },
  malformed: {
    skinport: '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","version":null,"min_price":',
    'skinport-sales': '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","version":null,"currency":"USD","last_24_hours":{"min":12.3',
  },
  rateLimited: '{"errors":[{"id":"rate_limit_exceeded","message":"Rate limit exceeded"}]}',
  create,
};
