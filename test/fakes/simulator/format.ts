/** How the simulator's upstreams write their bodies: money texts, the broken rows of each mode, a streaming body writer. */
import { type Entry, type MarketQuote, quoteFromCents } from './market.ts';
import type { SimulatorMode } from './types.ts';

/**
 * The `wrong_types` mode's value for a field whose right JSON text is `text`: an object wrapping it on
 * even rows, `true` on odd rows (types no upstream format uses for money).
 */
export function wrongType(text: string, index: number): string {
  return index % 2 === 0 ? `{"amount":${text}}` : 'true';
}

/**
 * A JSON body written row by row straight into bytes (Bun.ArrayBufferSink): twice as fast as joining
 * tens of thousands of row strings and encoding the result, and no second copy of the body as a string.
 */
export class BodyWriter {
  private readonly sink = new Bun.ArrayBufferSink();
  /** Rows written so far (the index of the next one). */
  count = 0;

  constructor(head: string, capacity: number) {
    this.sink.start({ highWaterMark: capacity, asUint8Array: true });
    this.sink.write(head);
  }

  row(text: string): void {
    if (this.count > 0) this.sink.write(',');
    this.sink.write(text);
    this.count += 1;
  }

  end(tail: string): Uint8Array<ArrayBuffer> {
    this.sink.write(tail);
    return this.sink.end() as Uint8Array<ArrayBuffer>;
  }
}

// ---- the marketplace bodies (the six and skinbaron)

export const millsText = (mills: number) => `${Math.floor(mills / 1000)}.${String(mills % 1000).padStart(3, '0')}`;
/** "30.100" → "30.1", "2.000" → "2". */
export const trimmedText = (mills: number) => {
  const fraction = mills % 1000;
  const whole = Math.floor(mills / 1000);
  if (fraction === 0) return String(whole);
  if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
  if (fraction % 10 === 0) return `${whole}.${String(fraction / 10).padStart(2, '0')}`;
  return `${whole}.${String(fraction).padStart(3, '0')}`;
};
/** A USD decimal: the pin verbatim, else two decimals (three when the ask is not whole cents). */
export const usdText = (quote: MarketQuote) => quote.pin ?? (quote.mills % 10 === 0 ? quoteFromCents(quote.mills / 10).text : millsText(quote.mills));

/** In partial mode, how row `index` is broken: 0 no name, 1 price of a wrong type, 2 negative price; null: intact. */
export const brokenKind = (mode: SimulatorMode, index: number) => (mode === 'partial' && index % 3 === 1 ? Math.floor(index / 3) % 3 : null);
/** A price field's JSON text (`"2.300"`, `2300`) as the mode writes it. */
export function money(json: string, index: number, mode: SimulatorMode): string {
  if (mode === 'wrong_types') return wrongType(json, index);
  const kind = brokenKind(mode, index);
  if (kind === 1) return `{"amount":${json}}`;
  if (kind === 2) return json.startsWith('"') ? `"-${json.slice(1)}` : `-${json}`;
  return json;
}
/** A secondary money field (buy orders, averages, maxima): wrong only in wrong_types. */
export const extraMoney = (json: string, index: number, mode: SimulatorMode) => (mode === 'wrong_types' && json !== 'null' ? wrongType(json, index) : json);
export const countText = (count: number, mode: SimulatorMode) => (mode === 'wrong_types' ? `"${count}"` : String(count));
export const nameMember = (key: string, entry: Entry, index: number, mode: SimulatorMode) =>
  brokenKind(mode, index) === 0 ? '' : `"${key}":${entry.nameJson},`;

/** A name as the upstreams' page URLs write it: `AK-47 | Redline (Field-Tested)` → `ak-47-redline-field-tested`. */
export const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[™★|()]/g, ' ')
    .trim()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

const slugs = new WeakMap<Entry, string>();
/** An entry's slug, computed once. */
export const slugOf = (entry: Entry) => {
  let text = slugs.get(entry);
  if (text === undefined) slugs.set(entry, (text = slug(entry.name)));
  return text;
};
