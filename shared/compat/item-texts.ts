import type { BuiltCompatDocument, CompatItem } from './types.ts';

/** What one item contributes to one format's document: its JSON text (null: not listed) and the oldest source time it used. */
export type ItemText<T = string> = { text: T | null; oldest: number | null };

/**
 * One format's text per item, kept between builds: shared/compat/dataset.ts gives an item whose data
 * did not change the object it had in the last build (and a changed item the source price objects
 * that did not change), so a build writes only the items that changed and joins the rest (at full
 * catalog most snapshots follow a run that changed a fraction of one source's prices). An item whose
 * object changed keeps its text too when `same` says that what this format reads of it did not change
 * (a format that reads only the steam source ignores a skinport run). `stamp` names what a text may
 * use beyond its item (the build time, the providers listed): a text that used it is written again
 * when the stamp changes; one that did not (`usedStamp` false) is kept whatever the stamp.
 */
export class ItemTexts<T = string> {
  /** The last text of each name, for an item whose object changed (`same`), or one made without slots. */
  private readonly kept = new Map<string, Kept<T>>();
  /** This instance's place in each item's text slots (withTextSlots). */
  private readonly slot = nextSlot++;

  constructor(private readonly same?: (before: CompatItem, now: CompatItem) => boolean) {}

  of(item: CompatItem, stamp: string, write: () => ItemText<T> & { usedStamp: boolean }): ItemText<T> {
    const slots = (item as ItemWithSlots)[TEXT_SLOTS];
    const own = slots?.[this.slot] as Kept<T> | undefined;
    if (own && (own.stamp === null || own.stamp === stamp)) return own;
    const kept = this.kept.get(item.market_hash_name);
    if (kept && (kept.stamp === null || kept.stamp === stamp) && (kept.item === item || this.same?.(kept.item, item))) {
      kept.item = item;
      if (slots) slots[this.slot] = kept;
      return kept;
    }
    const written = write();
    const entry: Kept<T> = { item, text: written.text, oldest: written.oldest, stamp: written.usedStamp ? stamp : null };
    this.kept.set(item.market_hash_name, entry);
    if (slots) slots[this.slot] = entry;
    return entry;
  }
}

let nextSlot = 0;
const TEXT_SLOTS = Symbol('compat item texts');
type ItemWithSlots = CompatItem & { [TEXT_SLOTS]?: unknown[] };

/**
 * Gives a new item the slots each format's texts of it sit in (shared/compat/dataset.ts calls it as it
 * makes items): most items of a build are the last build's objects, and reading a text from the item
 * costs ~1/20 of a lookup by name at full catalog. Not enumerable: no copy, comparison or JSON of the
 * item sees them; defined once, as the item is made, so every item keeps one shape.
 */
export function withTextSlots<I extends CompatItem>(item: I): I {
  Object.defineProperty(item, TEXT_SLOTS, { value: [], enumerable: false, writable: false, configurable: false });
  return item;
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
 * encoding the ~10 MB result cost ~50-75 ms per document; copying the kept bytes ~3-20 ms).
 */
export class JoinedBytes {
  private readonly parts: Uint8Array[] = [];
  private length = 0;

  /**
   * Whether these are the bytes `last` made: the same head and tail around the same kept texts (the
   * same objects, in the same order). A format whose every text was kept makes the document it made
   * last, which the store need not write again.
   */
  sameAs(last: { head: string; tail: string; parts: readonly Uint8Array[] } | null, head: string, tail: string): boolean {
    if (!last || last.head !== head || last.tail !== tail || last.parts.length !== this.parts.length) return false;
    for (let index = 0; index < this.parts.length; index += 1) if (last.parts[index] !== this.parts[index]) return false;
    return true;
  }

  /** What `sameAs` compares a later build with. */
  made(head: string, tail: string): { head: string; tail: string; parts: readonly Uint8Array[] } {
    return { head, tail, parts: this.parts };
  }

  push(part: Uint8Array): void {
    this.parts.push(part);
    this.length += part.length;
  }

  finish(head: string, tail: string): Buffer {
    const headBytes = Buffer.from(head);
    const tailBytes = Buffer.from(tail);
    const separators = Math.max(0, this.parts.length - 1);
    const out = Buffer.allocUnsafe(headBytes.length + this.length + separators + tailBytes.length);
    let at = headBytes.copy(out, 0);
    for (let index = 0; index < this.parts.length; index += 1) {
      if (index > 0) out[at++] = 0x2c; // ','
      const part = this.parts[index]!;
      out.set(part, at);
      at += part.length;
    }
    tailBytes.copy(out, at);
    return out;
  }
}

/**
 * One format's documents, build after build: each is its head, its kept texts and its tail, marked
 * `unchanged` when it is byte for byte the one this format made last (JoinedBytes.sameAs).
 */
export class FormatDocuments {
  private last: ReturnType<JoinedBytes['made']> | null = null;

  document(parts: JoinedBytes, head: string, tail: string, oldest: number | null): BuiltCompatDocument {
    const unchanged = parts.sameAs(this.last, head, tail);
    this.last = parts.made(head, tail);
    return { value: parts.finish(head, tail), oldest_source_ms: oldest, unchanged };
  }
}
