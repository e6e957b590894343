import type { CompatItem } from './types.ts';

/** What one item contributes to one format's document: its JSON text (null: not listed) and the oldest source time it used. */
export type ItemText<T = string> = { text: T | null; oldest: number | null };

/**
 * One format's text per item, kept by item object between builds: shared/compat/dataset.ts gives an
 * item whose data did not change the object it had in the last build, so a build writes only the
 * items that changed and joins the rest (at full catalog most snapshots follow a run that changed a
 * fraction of one source's prices). `stamp` names what a text may use beyond its item (the build time,
 * the providers listed): a text that used it is written again when the stamp changes; one that did
 * not (`usedStamp` false) is kept whatever the stamp.
 */
export class ItemTexts<T = string> {
  private kept = new WeakMap<CompatItem, ItemText<T> & { stamp: string | null }>();

  of(item: CompatItem, stamp: string, write: () => ItemText<T> & { usedStamp: boolean }): ItemText<T> {
    const kept = this.kept.get(item);
    if (kept && (kept.stamp === null || kept.stamp === stamp)) return kept;
    const written = write();
    const entry = { text: written.text, oldest: written.oldest, stamp: written.usedStamp ? stamp : null };
    this.kept.set(item, entry);
    return entry;
  }
}

/** The oldest of two source times (null: none). */
export function olderOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return a < b ? a : b;
}
