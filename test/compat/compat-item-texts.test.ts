import { describe, expect, test } from 'bun:test';
import { ItemTexts } from '../../shared/compat/item-texts.ts';
import type { CompatItem } from '../../shared/compat/types.ts';

/**
 * The formats' builders keep each item's text by item object between builds (shared/compat/dataset.ts
 * gives an unchanged item the object it had): a kept text is used again unless it used something
 * beyond its item (the build time, the providers) that has changed since.
 */
const item = (name: string): CompatItem => ({ market_hash_name: name, catalog_id: name, first_seen_ms: null, versions: {} });

describe('ItemTexts', () => {
  test('an item object’s text is written once, and again only when a stamp it used changes', () => {
    const texts = new ItemTexts();
    const plain = item('a');
    const timed = item('b');
    let writes = 0;
    const write = (text: string, usedStamp: boolean) => () => {
      writes += 1;
      return { text, oldest: 5, usedStamp };
    };
    expect(texts.of(plain, 't1', write('A', false))).toMatchObject({ text: 'A', oldest: 5 });
    expect(texts.of(timed, 't1', write('B1', true)).text).toBe('B1');
    expect(writes).toBe(2);
    expect(texts.of(plain, 't1', write('never', false)).text).toBe('A');
    expect(texts.of(timed, 't1', write('never', true)).text).toBe('B1');
    expect(writes).toBe(2);
    // A new build time: the text that used it is written again, the other kept.
    expect(texts.of(plain, 't2', write('never', false)).text).toBe('A');
    expect(texts.of(timed, 't2', write('B2', true)).text).toBe('B2');
    expect(writes).toBe(3);
    // Another object with the same name is another item.
    expect(texts.of(item('a'), 't2', write('A2', false)).text).toBe('A2');
    expect(writes).toBe(4);
  });
});
