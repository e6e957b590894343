import type { PublicPriceList } from './public-document.ts';

/**
 * Where each item of a snapshot's list is, by market_hash_name, for GET /v1/prices/{name}: built in
 * the derived-list thread (derived-list-thread.ts), not on the API's event loop, where parsing the
 * ~20 MB list at every new snapshot held every other request for a fraction of a second (seconds on
 * a busy machine). The API keeps only names and byte offsets: each item's JSON is read from the
 * snapshot's own bytes when asked for.
 */
export type SnapshotIndex = {
  /** Every market_hash_name of the list, one after another; the i-th ends at `nameEnds[i]` (a string index). */
  names: string;
  nameEnds: Uint32Array;
  /** Item i's JSON (JSON.stringify of the parsed item) is bytes `starts[i]` to `ends[i]` of `items`. */
  starts: Uint32Array;
  ends: Uint32Array;
  /**
   * Null when every item's JSON is a range of the snapshot's own bytes (a list written by
   * JSON.stringify, as every snapshot is); otherwise the items' JSON, one after another.
   */
  items: Uint8Array | null;
};

const ITEMS_KEY = Buffer.from('"items":[');

export function indexPriceList(json: Uint8Array): SnapshotIndex {
  const body = Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const list = JSON.parse(body.toString('utf8')) as PublicPriceList;
  const count = list.items.length;
  const nameEnds = new Uint32Array(count);
  const starts = new Uint32Array(count);
  const ends = new Uint32Array(count);
  const names: string[] = [];
  const texts: Buffer[] = [];
  let nameAt = 0;
  for (const [index, item] of list.items.entries()) {
    names.push(item.market_hash_name);
    nameAt += item.market_hash_name.length;
    nameEnds[index] = nameAt;
    texts.push(Buffer.from(JSON.stringify(item)));
  }
  // The list's text is `{…,"items":[` + each item's JSON, comma-separated, + `]}`: each item is found
  // in place, and checked byte for byte (the head holds no item, so the first `"items":[` is the list's).
  const head = body.indexOf(ITEMS_KEY);
  let inBody = head >= 0;
  let at = head + ITEMS_KEY.length;
  for (let index = 0; inBody && index < count; index += 1) {
    if (index > 0 && body[at++] !== 0x2c) inBody = false;
    const text = texts[index]!;
    if (!inBody || at + text.length > body.length || body.compare(text, 0, text.length, at, at + text.length) !== 0) inBody = false;
    starts[index] = at;
    at += text.length;
    ends[index] = at;
  }
  if (inBody) return { names: names.join(''), nameEnds, starts, ends, items: null };
  at = 0;
  for (const [index, text] of texts.entries()) {
    starts[index] = at;
    at += text.length;
    ends[index] = at;
  }
  const items = new Uint8Array(at);
  for (const [index, text] of texts.entries()) items.set(text, starts[index]!);
  return { names: names.join(''), nameEnds, starts, ends, items };
}
