import { describe, expect, test } from 'bun:test';
import { forgetPrevious, ItemTexts, JoinedBytes, withTextSlots } from '../../shared/compat/item-texts.ts';
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

  test('an item that follows another keeps its text where `same` says the values stand, its oldest taken anew', () => {
    let writes = 0;
    const texts = new ItemTexts<string>({ same: (before, now) => before.catalog_id === now.catalog_id, oldest: (_, now) => now.first_seen_ms });
    const write = (text: string) => () => {
      writes += 1;
      return { text, oldest: 1, usedStamp: false };
    };
    const first = withTextSlots({ ...item('a'), first_seen_ms: 1 });
    expect(texts.of(first, '', write('A'))).toMatchObject({ text: 'A', oldest: 1 });
    // Same values, a newer time: the text stays, the oldest is the new item's.
    const timed = withTextSlots({ ...item('a'), first_seen_ms: 7 }, first);
    expect(texts.of(timed, '', write('never'))).toMatchObject({ text: 'A', oldest: 7 });
    // Other values: written again.
    const changed = withTextSlots({ ...item('a'), catalog_id: 'other', first_seen_ms: 8 }, timed);
    expect(texts.of(changed, '', write('A2'))).toMatchObject({ text: 'A2', oldest: 1 });
    expect(writes).toBe(2);
    // An item whose predecessor was let go has nothing to keep.
    forgetPrevious(changed);
    const orphan = withTextSlots({ ...item('a'), catalog_id: 'other' });
    expect(texts.of(orphan, '', write('A3')).text).toBe('A3');
    expect(writes).toBe(3);
  });
});

describe('JoinedBytes', () => {
  test('texts joined by commas, pieces appended to a text without one; the same pieces make the same document', () => {
    const head = Buffer.from('[');
    const tail = Buffer.from(']');
    const one = Buffer.from('{"a":');
    const time = Buffer.from('1}');
    const two = Buffer.from('2');
    const build = () => {
      const parts = new JoinedBytes();
      parts.push(one);
      parts.append(time);
      parts.push(two);
      return parts;
    };
    const parts = build();
    const out = parts.finishInto(Buffer.alloc(parts.byteLength(head, tail)), head, tail);
    expect(out.toString()).toBe('[{"a":1},2]');
    expect(JSON.parse(out.toString())).toEqual([{ a: 1 }, 2]);
    expect(build().sameAs(parts.made('[', ']'), '[', ']')).toBe(true);
    // The same bytes grouped otherwise (a piece as a text of its own) are another document.
    const regrouped = new JoinedBytes();
    regrouped.push(one);
    regrouped.push(time);
    regrouped.push(two);
    expect(regrouped.sameAs(parts.made('[', ']'), '[', ']')).toBe(false);
  });
});
