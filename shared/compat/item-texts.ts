import type { BuiltCompatDocument, CompatItem } from './types.ts';

/** What one item contributes to one format's document: its JSON text (null: not listed) and the oldest source time it used. */
export type ItemText<T = string> = { text: T | null; oldest: number | null };

/**
 * What a format's kept text depends on. `same` says that `now` carries the values `before` had that the
 * text reads (times aside): the text is kept, and `oldest` gives the oldest source time it uses as of
 * `now` (without `oldest`, `same` must also compare the times the text and its oldest read).
 */
export type TextRules<T> = {
  same?: (before: CompatItem, now: CompatItem) => boolean;
  oldest?: (text: T, item: CompatItem) => number | null;
  /**
   * `same` compares values alone (every time the text uses is applied apart): an item its maker marked
   * as carrying its predecessor's values (markSameValues) needs no comparison.
   */
  valuesOnly?: boolean;
};

/**
 * One format's text per item, kept between builds. shared/compat/dataset.ts gives an item whose rows did
 * not change the object it had in the last build, and a changed item the source price objects that did
 * not change; a format keeps an item's text by its object, and by name when `rules.same` says that what
 * the text reads did not change. Most items of a snapshot change only in time: a whole-market listing
 * observes every price it lists again (current_prices, sql/0013), so a text holds values, and the times
 * a format writes (Skinport's updated_at) or reports (`oldest`: a document's X-Source-Age) are applied
 * apart from it. `stamp` names what a text may use beyond its item (the providers listed, the build
 * time): a text that used it is written again when the stamp changes; one that did not (`usedStamp`
 * false) is kept whatever the stamp.
 */
export class ItemTexts<T = string> {
  /** The last text of each name, for items made without slots (withTextSlots): by name, not by predecessor. */
  private readonly kept = new Map<string, Kept<T>>();
  /** This instance's place in each item's text slots (withTextSlots). */
  private readonly slot = nextSlot++;

  constructor(private readonly rules: TextRules<T> = {}) {}

  of(item: CompatItem, stamp: string, write: () => ItemText<T> & { usedStamp: boolean }): ItemText<T> {
    const texts = (item as ItemWithTexts)[TEXTS];
    const own = texts?.slots[this.slot] as Kept<T> | undefined;
    if (own && (own.stamp === null || own.stamp === stamp)) return own;
    // A changed item's last text is its predecessor's (no lookup by name): found in the slots the
    // predecessor's build filled.
    const kept = texts
      ? ((texts.previous as ItemWithTexts | undefined)?.[TEXTS]?.slots[this.slot] as Kept<T> | undefined)
      : this.kept.get(item.market_hash_name);
    let entry: Kept<T>;
    if (kept && (kept.stamp === null || kept.stamp === stamp) && kept.item === item) entry = kept;
    else if (
      kept &&
      (kept.stamp === null || kept.stamp === stamp) &&
      ((this.rules.valuesOnly === true && texts?.sameValues === true) || this.rules.same?.(kept.item, item))
    ) {
      const oldest = kept.text !== null && this.rules.oldest ? this.rules.oldest(kept.text, item) : kept.oldest;
      entry = { item, text: kept.text, oldest, stamp: kept.stamp };
    } else {
      const written = write();
      entry = { item, text: written.text, oldest: written.oldest, stamp: written.usedStamp ? stamp : null };
    }
    if (texts) texts.slots[this.slot] = entry;
    else this.kept.set(item.market_hash_name, entry);
    return entry;
  }
}

let nextSlot = 0;
const TEXTS = Symbol('compat item texts');
/**
 * An item's texts, one slot per ItemTexts instance, the item it follows (whose texts it may keep), and
 * whether it carries that item's values (markSameValues).
 */
type TextsRecord = { slots: unknown[]; previous: CompatItem | undefined; sameValues: boolean };
type ItemWithTexts = CompatItem & { [TEXTS]?: TextsRecord };

/**
 * Gives a new item the slots each format's texts of it sit in (shared/compat/dataset.ts calls it as it
 * makes items), and the item of the same name it follows (the last build's), whose texts a format
 * keeps where what it reads did not change. Most items of a build are the last build's objects, and
 * reading a text from the item costs a fraction of a lookup by name at full catalog. Not enumerable:
 * no copy, comparison or JSON of the item sees them; defined once, as the item is made, so every item
 * keeps one shape.
 */
export function withTextSlots<I extends CompatItem>(item: I, previous?: CompatItem): I {
  const texts: TextsRecord = { slots: [], previous, sameValues: false };
  Object.defineProperty(item, TEXTS, { value: texts, enumerable: false, writable: false, configurable: false });
  return item;
}

/**
 * Says whether `item` carries every value of the item it follows (prices, freshness, consensus,
 * windows; times aside): a format whose texts hold values alone then keeps its text without comparing.
 */
export function markSameValues(item: CompatItem, same: boolean): void {
  const texts = (item as ItemWithTexts)[TEXTS];
  if (texts) texts.sameValues = same && texts.previous !== undefined;
}

/**
 * Lets go of the item `item` followed: once a build has made (or kept) `item`, its formats have taken
 * over what they keep, and an older item held on to would keep every item it followed alive.
 */
export function forgetPrevious(item: CompatItem): void {
  const texts = (item as ItemWithTexts)[TEXTS];
  if (texts) {
    texts.previous = undefined;
    texts.sameValues = false;
  }
}

type Kept<T> = ItemText<T> & { item: CompatItem; stamp: string | null };

/** The oldest of two source times (null: none). */
export function olderOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return a < b ? a : b;
}

/**
 * A document's bytes: a head, the items' texts (UTF-8 bytes, kept by ItemTexts) joined by commas, and
 * a tail, each item's bytes copied once into the document (at full catalog, joining ~37 000 strings and
 * encoding the ~10 MB result cost ~50-75 ms per document; copying the kept bytes ~3-20 ms). A text may
 * be pushed in pieces: `append` continues the text `push` began (a kept text and the time written after it).
 */
export class JoinedBytes {
  private readonly parts: Uint8Array[] = [];
  /** Per part: whether it begins a text (a comma goes before it, but before the first). */
  private readonly begins: boolean[] = [];
  private length = 0;
  private texts = 0;

  /**
   * Whether these are the bytes `last` made: the same head and tail around the same kept pieces (the
   * same objects, in the same order and grouping). A format whose every text was kept makes the
   * document it made last, which the store need not write again.
   */
  sameAs(last: ReturnType<JoinedBytes['made']> | null, head: string, tail: string): boolean {
    if (!last || last.head !== head || last.tail !== tail || last.parts.length !== this.parts.length) return false;
    for (let index = 0; index < this.parts.length; index += 1) {
      if (last.parts[index] !== this.parts[index] || last.begins[index] !== this.begins[index]) return false;
    }
    return true;
  }

  /** What `sameAs` compares a later build with. */
  made(head: string, tail: string): { head: string; tail: string; parts: readonly Uint8Array[]; begins: readonly boolean[] } {
    return { head, tail, parts: this.parts, begins: this.begins };
  }

  /** A text (comma-separated from the one before). */
  push(part: Uint8Array): void {
    this.parts.push(part);
    this.begins.push(true);
    this.length += part.length;
    this.texts += 1;
  }

  /** More of the text pushed last. */
  append(part: Uint8Array): void {
    this.parts.push(part);
    this.begins.push(false);
    this.length += part.length;
  }

  /** The document's size in bytes. */
  byteLength(head: Buffer, tail: Buffer): number {
    return head.length + this.length + Math.max(0, this.texts - 1) + tail.length;
  }

  /** The document written into the start of `out` (at least byteLength long). */
  finishInto(out: Buffer, head: Buffer, tail: Buffer): Buffer {
    let at = head.copy(out, 0);
    for (let index = 0; index < this.parts.length; index += 1) {
      if (index > 0 && this.begins[index]) out[at++] = 0x2c; // ','
      const part = this.parts[index]!;
      out.set(part, at);
      at += part.length;
    }
    at += tail.copy(out, at);
    return out.subarray(0, at);
  }
}

/**
 * One format's documents, build after build: each is its head, its kept texts and its tail, marked
 * `unchanged` when it is byte for byte the one this format made last (JoinedBytes.sameAs). A document
 * is written into memory its format wrote an earlier one into, once the store has released that one
 * (BuiltCompatDocument.release): a fresh ~10 MB buffer a build cost ~20-30 ms more at full catalog
 * (its pages touched anew, and the collector run over the heap it grew), against ~5 ms of copying.
 */
export class FormatDocuments {
  private last: ReturnType<JoinedBytes['made']> | null = null;
  /** Released buffers (at most two: a build's and the one before, should a write still hold it). */
  private readonly spare: Buffer[] = [];

  document(parts: JoinedBytes, head: string, tail: string, oldest: number | null): BuiltCompatDocument {
    const unchanged = parts.sameAs(this.last, head, tail);
    this.last = parts.made(head, tail);
    const headBytes = Buffer.from(head);
    const tailBytes = Buffer.from(tail);
    const size = parts.byteLength(headBytes, tailBytes);
    let memory = this.spare.pop();
    // Room to grow by a few per cent before the next one is needed.
    if (memory === undefined || memory.length < size) memory = Buffer.allocUnsafeSlow(Math.ceil(size * 1.05) + 1024);
    const owned = memory;
    let released = false;
    return {
      value: parts.finishInto(owned, headBytes, tailBytes),
      oldest_source_ms: oldest,
      unchanged,
      release: () => {
        if (released) return;
        released = true;
        if (this.spare.length < 2) this.spare.push(owned);
      },
    };
  }
}
