import { describe, expect, test } from 'bun:test';
import { parseTradeHold, readHold } from '../../shared/gameplatform/inventory/holds.ts';

/**
 * docs/design.md §17's hold and protection text forms, with the strings client libraries have recorded from
 * Steam (verbatim; where each was found is noted beside it), plus a non-English [date] text.
 */

const READ = new Date('2026-11-28T12:00:00Z');
const line = (value: string, type = 'html') => ({ type, value });
const hold = (lines: ReturnType<typeof line>[], extra: Record<string, unknown> = {}, context: 2 | 16 = 2, readAt = READ) =>
  readHold({ owner_descriptions: lines, ...extra }, context, readAt);

describe('form 1: [date]<unix seconds>[/date] decides, whatever the language', () => {
  test('the protection line a client recorded (docs/design.md §17 example)', () => {
    // Recorded in a TypeScript inventory client (comment: "verified against a live account: 57 held context-16 assets").
    const reading = hold([line('This item is trade-protected and cannot be consumed, modified, or transferred until [date]1786384800[/date]', 'bbcode')]);
    expect(reading.trade_hold_until).toBe('2026-08-10T18:00:00.000Z');
    expect(reading.protection).toEqual({ protected: true, reason: 'trade_protected', until: '2026-08-10T18:00:00.000Z', context: 2 });
    expect(reading.unreadable).toBe(false);
  });

  test('with the leading ⇆, and a second recorded instant', () => {
    // A Python client's test: "…transferred until [date]1786442400[/date]" → 2026-08-11T10:00:00+00:00.
    expect(
      hold([line('⇆ This item is trade-protected and cannot be consumed, modified, or transferred until [date]1786442400[/date]', 'bbcode')]).trade_hold_until,
    ).toBe('2026-08-11T10:00:00.000Z');
    // A Python client's docstring: "[date]1787569200[/date]" (2026-08-24 11:00 GMT).
    expect(parseTradeHold([line('⇆ This item is trade-protected and cannot be consumed, modified, or transferred until [date]1787569200[/date]')])).toBe(
      '2026-08-24T11:00:00.000Z',
    );
  });

  test('a non-English text carrying the same token gives the same instant (not recognised as protected by its words)', () => {
    // German as Steam localises owner text with an account language of German (constructed around the recorded token).
    const german = hold([
      line('⇆ Dieser Gegenstand ist handelsgeschützt und kann bis [date]1786384800[/date] nicht verbraucht, verändert oder übertragen werden.', 'bbcode'),
    ]);
    expect(german.trade_hold_until).toBe('2026-08-10T18:00:00.000Z');
    expect(german.protection.protected).toBe(false);
    // …but sealed says so in any language.
    expect(hold([line('⇆ Dieser Gegenstand ist handelsgeschützt … bis [date]1786384800[/date]', 'bbcode')], { sealed: 1 }).protection).toMatchObject({
      protected: true,
      reason: 'trade_protected',
      until: '2026-08-10T18:00:00.000Z',
    });
  });

  test('the token wins over a dated text on another line, and HTML tags and odd spacing are ignored', () => {
    const reading = hold([
      line('Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT'),
      line('<span>This item is trade-protected and cannot be consumed,\u00a0 modified, or\n transferred until</span> [date] 1786384800 [/date]'),
    ]);
    expect(reading.trade_hold_until).toBe('2026-08-10T18:00:00.000Z');
  });
});

describe('form 2: dated, month or day first, with or without GMT, read as GMT', () => {
  test.each([
    // A TypeScript client's fixture of a real page.
    ['Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT', '2026-10-01T07:00:00.000Z'],
    // A TypeScript type's comment: "owner-only visible descriptions like …".
    ['Tradable/Marketable After Nov 25, 2025 (8:00:00) GMT', '2025-11-25T08:00:00.000Z'],
    // A Python client's trade-hold module: "note the **day month, year** order".
    ['Tradable/Marketable After 27 Aug, 2026 (14:00:00) GMT', '2026-08-27T14:00:00.000Z'],
    // A Python client's test of the day-first form.
    ['Tradable/Marketable After 3 Feb, 2099 (18:00:00) GMT', '2099-02-03T18:00:00.000Z'],
    // A TypeScript client's test of the older wording.
    ['Tradable After Sep 21, 2025 (7:00:00) GMT', '2025-09-21T07:00:00.000Z'],
    // The same client's test of the context-16 line with a rendered date.
    ['⇆ This item is trade-protected and cannot be consumed, modified, or transferred until Apr 13, 2026 (7:00:00) GMT', '2026-04-13T07:00:00.000Z'],
    // A Python client's test: "trade-protected until …".
    ['This item is trade-protected until Sep 11, 2026 (6:00:00) GMT.', '2026-09-11T06:00:00.000Z'],
    ['Tradable/Marketable After Oct 01, 2026 (7:00:00)', '2026-10-01T07:00:00.000Z'],
    ['Tradable/Marketable After 1 Oct, 2026 (17:05:09)', '2026-10-01T17:05:09.000Z'],
  ])('%s', (text, instant) => {
    expect(hold([line(text)]).trade_hold_until).toBe(instant);
  });

  test('an impossible date is not a date (Feb 30), and the text is counted as unreadable', () => {
    const reading = hold([line('Tradable After Feb 30, 2025 (7:00:00) GMT'), line('nothing')]);
    expect(reading.trade_hold_until).toBeNull();
    expect(reading.unreadable).toBe(true);
  });
});

describe('form 3: year-less "D Mon @ h:mmam|pm", GMT, the nearest instant not more than 2 days past', () => {
  test('the form Steam renders since 2026-06-24', () => {
    // docs/design.md §17's example, and one an operator pasted from a live inventory ("Tradable/Marketable After 5 Aug @ 5:00am").
    expect(hold([line('Tradable/Marketable After 29 Jun @ 7:00am')], {}, 2, new Date('2026-06-24T10:00:00Z')).trade_hold_until).toBe(
      '2026-06-29T07:00:00.000Z',
    );
    expect(hold([line('Tradable/Marketable After 5 Aug @ 5:00am')], {}, 2, new Date('2026-07-30T00:00:00Z')).trade_hold_until).toBe('2026-08-05T05:00:00.000Z');
    // A Python client's test: "…cannot be traded until 21 Jul @ 1:00pm."
    expect(
      hold([line('This item is trade-protected and cannot be traded until 21 Jul @ 1:00pm.')], {}, 2, new Date('2026-07-01T00:00:00Z')).trade_hold_until,
    ).toBe('2026-07-21T13:00:00.000Z');
    expect(hold([line('Tradable/Marketable After 3 Jul @ 12:30am')], {}, 2, new Date('2026-07-01T00:00:00Z')).trade_hold_until).toBe(
      '2026-07-03T00:30:00.000Z',
    );
    expect(hold([line('Tradable/Marketable After 3 Jul @ 12:30pm')], {}, 2, new Date('2026-07-01T00:00:00Z')).trade_hold_until).toBe(
      '2026-07-03T12:30:00.000Z',
    );
  });

  test('across a year boundary: read on 30 Dec, "2 Jan" is next year; read on 2 Jan, "31 Dec" within 2 days is the previous year', () => {
    expect(hold([line('Tradable/Marketable After 2 Jan @ 7:00am')], {}, 2, new Date('2026-12-30T09:00:00Z')).trade_hold_until).toBe('2027-01-02T07:00:00.000Z');
    expect(hold([line('Tradable/Marketable After 31 Dec @ 11:00pm')], {}, 2, new Date('2027-01-02T09:00:00Z')).trade_hold_until).toBe(
      '2026-12-31T23:00:00.000Z',
    );
    // 2 days and 2 hours past is too far back: that day next year.
    expect(hold([line('Tradable/Marketable After 31 Dec @ 7:00am')], {}, 2, new Date('2027-01-02T09:00:00Z')).trade_hold_until).toBe(
      '2027-12-31T07:00:00.000Z',
    );
    // More than 2 days past is next year's day instead.
    expect(hold([line('Tradable/Marketable After 27 Dec @ 7:00am')], {}, 2, new Date('2027-01-02T09:00:00Z')).trade_hold_until).toBe(
      '2027-12-27T07:00:00.000Z',
    );
  });

  test('13:00pm and 0:10am are not times', () => {
    expect(hold([line('Tradable/Marketable After 2 Jan @ 13:00pm')]).trade_hold_until).toBeNull();
    expect(hold([line('Tradable/Marketable After 2 Jan @ 0:10am')]).unreadable).toBe(true);
  });
});

describe('form 4, protection and what is counted', () => {
  test('item_expiration when it is a date-time, only after the text forms', () => {
    expect(hold([], { item_expiration: '2026-08-27T14:00:00Z' }).trade_hold_until).toBe('2026-08-27T14:00:00.000Z');
    expect(hold([line('Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT')], { item_expiration: '2026-08-27T14:00:00Z' }).trade_hold_until).toBe(
      '2026-10-01T07:00:00.000Z',
    );
    expect(hold([], { item_expiration: 'soon' }).trade_hold_until).toBeNull();
    expect(hold([], { item_expiration: 1786384800 }).trade_hold_until).toBeNull();
  });

  test('descriptions are read as well as owner_descriptions', () => {
    expect(readHold({ descriptions: [line('Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT')] }, 2, READ).trade_hold_until).toBe(
      '2026-10-01T07:00:00.000Z',
    );
  });

  test('sealed_type 1 is a market listing (no instant), sealed true or "1" protects, context 16 protects, a plain hold is not protected', () => {
    // A client's fixture of a listed item's owner line.
    const listed = hold([line('This item is listed on the Steam Community Market and cannot be consumed or modified while listed.')], {
      sealed: 1,
      sealed_type: 1,
    });
    expect(listed).toEqual({ trade_hold_until: null, protection: { protected: true, reason: 'market_listing', until: null, context: 2 }, unreadable: false });
    expect(hold([], { sealed: true }).protection).toEqual({ protected: true, reason: 'trade_protected', until: null, context: 2 });
    expect(hold([], { sealed: '1' }).protection.protected).toBe(true);
    expect(hold([], {}, 16).protection).toEqual({ protected: true, reason: 'trade_protected', until: null, context: 16 });
    const market = hold([line('Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT')]);
    expect(market).toEqual({
      trade_hold_until: '2026-10-01T07:00:00.000Z',
      protection: { protected: false, reason: null, until: null, context: 2 },
      unreadable: false,
    });
    expect(hold([line('Exterior: Field-Tested'), line(' ')])).toEqual({
      trade_hold_until: null,
      protection: { protected: false, reason: null, until: null, context: 2 },
      unreadable: false,
    });
  });

  test('protection text without an instant keeps null and is counted; hostile values are ignored', () => {
    expect(hold([line('⇆ This item is trade-protected and cannot be consumed, modified, or transferred.')])).toMatchObject({
      trade_hold_until: null,
      unreadable: true,
      protection: { protected: true },
    });
    expect(hold([line('This item is trade-protected until [date]bad[/date].')]).unreadable).toBe(true);
    expect(hold([line('x [date]99999999999999999999[/date]')]).trade_hold_until).toBeNull();
    expect(
      readHold({ owner_descriptions: [null, 7, { value: 12 }, { value: 'Tradable After '.repeat(5000) }], descriptions: 'no' }, 2, READ).trade_hold_until,
    ).toBeNull();
  });
});
