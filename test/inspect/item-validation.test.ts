import { describe, expect, test } from 'bun:test';
import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import fc from 'fast-check';
import { decodeCertificate, encodeCertificate, type ItemState, validateItemSelector } from '../../shared/inspect/index.ts';

/**
 * validateItemSelector (docs/design.md §10 "Item selector", `invalid_item`): what renders and viewer sessions
 * accept. The property test is the contract with inspect decode: any certificate of an item the
 * catalog library knows decodes to a selector that passes unchanged.
 */

const AK47 = { family: 'weapon', definition_index: 7 } as const;
const libItems = (type: string) => CS2_ITEMS.filter((item) => item.type === type);

const fieldsOf = (input: unknown, options?: { field?: string }) => {
  const result = validateItemSelector(input, options);
  if (result.ok) throw new Error(`accepted ${JSON.stringify(input)}`);
  return result.details.map((detail) => detail.field);
};

// Typed loosely on purpose: most cases are invalid selectors. Results are compared as plain values.
const withState = (state: Record<string, unknown>, item: Record<string, unknown> = AK47): unknown => ({ item, state });

describe('validateItemSelector: accepts', () => {
  test('a painted AK-47, gloves, a vanilla knife (paint 0) and a charm with paint 0 as the game writes it', () => {
    for (const input of [
      withState({ paint_index: 44, paint_seed: 661, wear: 0.07, stattrak: { value: 0 }, name_tag: 'Blue Gem' }),
      withState({ paint_index: 10008, paint_seed: 461, wear: 0.1 }, { family: 'gloves', definition_index: 5027 }),
      withState({ paint_index: 0 }, { family: 'knife', definition_index: 500 }),
      withState({ paint_index: 0, charms: [{ slot: 0, charm_id: 36 }] }, { family: 'charm', definition_index: 1355 }),
      withState({}, AK47),
    ]) {
      expect(validateItemSelector(input) as unknown).toEqual({ ok: true, selector: input });
    }
  });

  test('a whole inspect-decode answer: rarity, quality, origin, item_id, certificate and other fields are ignored', () => {
    const answer = { item: AK47, state: { paint_index: 44 }, rarity: 6, quality: 4, origin: 8, item_id: '1', certificate: '00', anything: { else: true } };
    expect(validateItemSelector(answer) as unknown).toEqual({ ok: true, selector: withState({ paint_index: 44 }) });
  });

  test('patch kits on an agent and graffiti kits are sticker ids (the game names them in stickers[])', () => {
    const agent = libItems('agent')[0]!;
    const patch = libItems('patch')[0]!;
    const graffiti = libItems('graffiti').find((item) => item.def !== undefined)!;
    expect(
      validateItemSelector(withState({ stickers: [{ slot: 0, sticker_id: patch.index }] }, { family: 'agent', definition_index: agent.def })),
    ).toMatchObject({ ok: true });
    expect(
      validateItemSelector(withState({ stickers: [{ slot: 0, sticker_id: graffiti.index }] }, { family: 'other', definition_index: graffiti.def })),
    ).toMatchObject({ ok: true });
  });

  test('the bounds are inclusive: seed 0 and 1000, wear 0 and 1, slot 7, scale 10, rotation ±360, offsets ±2 and ±100, pattern 100000', () => {
    const input = withState({
      paint_seed: 1000,
      wear: 1,
      stickers: [
        { slot: 7, sticker_id: 76, wear: 1, scale: 10, rotation: -360, offset_x: -2, offset_y: 2 },
        { slot: 0, sticker_id: 76, wear: 0, scale: 0.001, rotation: 360 },
      ],
      charms: [{ slot: 7, charm_id: 36, pattern: 100_000, offset_x: -100, offset_y: 100, offset_z: 0 }],
    });
    expect(validateItemSelector(input)).toMatchObject({ ok: true });
    expect(validateItemSelector(withState({ paint_seed: 0, wear: 0 }))).toMatchObject({ ok: true });
  });
});

describe('validateItemSelector: invalid_item details name the field', () => {
  test('an unknown definition, and a family that is not the definition’s', () => {
    expect(fieldsOf({ item: { family: 'weapon', definition_index: 99_999 }, state: {} })).toEqual(['body.item.item.definition_index']);
    expect(fieldsOf({ item: { family: 'knife', definition_index: 7 }, state: {} })).toEqual(['body.item.item.family']);
    expect(fieldsOf({ item: { family: 'pistol', definition_index: 7 }, state: {} })).toEqual(['body.item.item.family']);
  });

  test('a paint that does not exist for the definition, and any paint on a family that takes none', () => {
    // 415 is the Ruby Doppler, a knife finish; the AK-47 has none such.
    expect(fieldsOf(withState({ paint_index: 415 }))).toEqual(['body.item.state.paint_index']);
    expect(fieldsOf(withState({ paint_index: 44 }, { family: 'sticker', definition_index: 1209 }))).toEqual(['body.item.state.paint_index']);
    expect(fieldsOf(withState({ paint_index: 44 }, { family: 'agent', definition_index: libItems('agent')[0]!.def! }))).toEqual([
      'body.item.state.paint_index',
    ]);
    expect(fieldsOf(withState({ paint_index: 1 }, { family: 'charm', definition_index: 1355 }))).toEqual(['body.item.state.paint_index']);
  });

  test('sticker and charm ids the catalog does not know', () => {
    expect(
      fieldsOf(
        withState({
          stickers: [
            { slot: 0, sticker_id: 76 },
            { slot: 1, sticker_id: 9_999_999 },
          ],
        }),
      ),
    ).toEqual(['body.item.state.stickers.1.sticker_id']);
    expect(fieldsOf(withState({ charms: [{ slot: 0, charm_id: 9_999_999 }] }))).toEqual(['body.item.state.charms.0.charm_id']);
  });

  test('out-of-range state: each bound names its own field', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ paint_seed: 1001 }, 'paint_seed'],
      [{ paint_seed: -1 }, 'paint_seed'],
      [{ paint_seed: 1.5 }, 'paint_seed'],
      [{ wear: 1.0001 }, 'wear'],
      [{ wear: -0.1 }, 'wear'],
      [{ paint_index: -1 }, 'paint_index'],
      [{ stattrak: { value: -1 } }, 'stattrak.value'],
      [{ stattrak: 0 }, 'stattrak'],
      [{ name_tag: '' }, 'name_tag'],
      [{ name_tag: 'x'.repeat(101) }, 'name_tag'],
      [{ stickers: [{ slot: 8, sticker_id: 76 }] }, 'stickers.0.slot'],
      [{ stickers: [{ slot: -1, sticker_id: 76 }] }, 'stickers.0.slot'],
      [{ stickers: [{ slot: 0, sticker_id: 76, wear: 2 }] }, 'stickers.0.wear'],
      [{ stickers: [{ slot: 0, sticker_id: 76, scale: 0 }] }, 'stickers.0.scale'],
      [{ stickers: [{ slot: 0, sticker_id: 76, scale: 10.5 }] }, 'stickers.0.scale'],
      [{ stickers: [{ slot: 0, sticker_id: 76, rotation: 361 }] }, 'stickers.0.rotation'],
      [{ stickers: [{ slot: 0, sticker_id: 76, offset_x: 2.5 }] }, 'stickers.0.offset_x'],
      [{ stickers: [{ slot: 0, sticker_id: 76, offset_y: -3 }] }, 'stickers.0.offset_y'],
      [{ stickers: [{ slot: 0, sticker_id: 76, glow: true }] }, 'stickers.0.glow'],
      [{ stickers: Array.from({ length: 33 }, () => ({ slot: 0, sticker_id: 76 })) }, 'stickers'],
      [{ charms: [{ slot: 8, charm_id: 36 }] }, 'charms.0.slot'],
      [{ charms: [{ slot: 0, charm_id: 36, pattern: 100_001 }] }, 'charms.0.pattern'],
      [{ charms: [{ slot: 0, charm_id: 36, offset_z: 101 }] }, 'charms.0.offset_z'],
      [{ charms: Array.from({ length: 9 }, () => ({ slot: 0, charm_id: 36 })) }, 'charms'],
      [{ paintseed: 3 }, 'paintseed'],
    ];
    for (const [state, field] of cases) {
      expect({ state, fields: fieldsOf(withState(state)) }).toEqual({ state, fields: [`body.item.state.${field}`] });
    }
  });

  test('not an object, no item or state, an unknown field in item; several problems give several details', () => {
    expect(fieldsOf(null)).toEqual(['body.item']);
    expect(fieldsOf('AK-47')).toEqual(['body.item']);
    expect(fieldsOf({ item: AK47 })).toEqual(['body.item.state']);
    expect(fieldsOf({ state: {} })).toEqual(['body.item.item']);
    expect(fieldsOf({ item: { ...AK47, paint_index: 44 }, state: {} })).toEqual(['body.item.item.paint_index']);
    expect(
      fieldsOf({ item: { family: 'knife', definition_index: 7 }, state: { paint_index: 99_999, stickers: [{ slot: 0, sticker_id: 9_999_999 }] } }),
    ).toEqual(['body.item.item.family', 'body.item.state.paint_index', 'body.item.state.stickers.0.sticker_id']);
  });

  test('options.field puts the details under another place in the request', () => {
    expect(fieldsOf(withState({ paint_seed: 2000 }), { field: 'body.items.3' })).toEqual(['body.items.3.state.paint_seed']);
  });
});

describe('validateItemSelector: every decoded certificate of a catalog item passes unchanged', () => {
  const paintable = [
    ...new Set(CS2_ITEMS.filter((item) => ['weapon', 'melee', 'glove'].includes(item.type) && item.def !== undefined).map((item) => item.def!)),
  ].map((def) => ({ def, paints: CS2_ITEMS.filter((item) => item.def === def && item.index !== undefined).map((item) => item.index!) }));
  const unpainted = [
    ...new Set(
      CS2_ITEMS.filter((item) => ['agent', 'case', 'sticker', 'keychain', 'collectible', 'musickit'].includes(item.type) && item.def !== undefined).map(
        (item) => item.def!,
      ),
    ),
  ];
  const stickerIds = [...new Set(libItems('sticker').map((item) => item.index!))];
  const charmIds = [...new Set(libItems('keychain').map((item) => item.index!))];
  const float = (min: number, max: number) => fc.float({ min: Math.fround(min), max: Math.fround(max), noNaN: true });

  const definitionAndPaint = fc.oneof(
    fc
      .constantFrom(...paintable)
      .chain(({ def, paints }) =>
        fc.record({ def: fc.constant(def), paint: paints.length > 0 ? fc.option(fc.constantFrom(...paints), { nil: undefined }) : fc.constant(undefined) }),
      ),
    fc.record({ def: fc.constantFrom(...unpainted), paint: fc.constantFrom(undefined, 0) }),
  );
  const sticker = fc.record(
    {
      slot: fc.integer({ min: 0, max: 7 }),
      sticker_id: fc.constantFrom(...stickerIds),
      wear: float(0, 1),
      scale: float(0.01, 10),
      rotation: float(-360, 360),
      offset_x: float(-2, 2),
      offset_y: float(-2, 2),
    },
    { requiredKeys: ['slot', 'sticker_id'] },
  );
  const charm = fc.record(
    {
      slot: fc.integer({ min: 0, max: 7 }),
      charm_id: fc.constantFrom(...charmIds),
      pattern: fc.integer({ min: 0, max: 100_000 }),
      offset_x: float(-100, 100),
      offset_y: float(-100, 100),
      offset_z: float(-100, 100),
    },
    { requiredKeys: ['slot', 'charm_id'] },
  );
  const certificateItem = fc.record({
    definition: definitionAndPaint,
    state: fc.record(
      {
        paint_seed: fc.integer({ min: 0, max: 1000 }),
        wear: float(0, 1),
        stattrak: fc.record({ value: fc.integer({ min: 0, max: 0xffff_ffff }) }),
        name_tag: fc.string({ minLength: 1, maxLength: 20 }),
        stickers: fc.array(sticker, { minLength: 1, maxLength: 6 }),
        charms: fc.array(charm, { minLength: 1, maxLength: 1 }),
      },
      { requiredKeys: [] },
    ),
    rarity: fc.option(fc.integer({ min: 0, max: 7 }), { nil: undefined }),
    item_id: fc.option(fc.bigInt({ min: 1n, max: (1n << 64n) - 1n }).map(String), { nil: undefined }),
    key: fc.integer({ min: 0, max: 255 }),
  });

  test('fast-check over encodeCertificate items (definitions, paints, stickers and charms from cs2-lib), masked and unmasked', () => {
    fc.assert(
      fc.property(certificateItem, ({ definition, state, rarity, item_id, key }) => {
        const itemState: ItemState = { ...state, ...(definition.paint === undefined ? {} : { paint_index: definition.paint }) };
        const certificate = encodeCertificate({ item: { definition_index: definition.def }, state: itemState, rarity, item_id }, { key });
        // As a client receives it: the decode answer after a trip through JSON.
        const answer = JSON.parse(JSON.stringify(decodeCertificate(certificate))) as ReturnType<typeof decodeCertificate>;
        const result = validateItemSelector(answer);
        if (!result.ok) throw new Error(`${certificate}: ${JSON.stringify(result.details)}`);
        expect(result.selector).toEqual({ item: answer.item, state: answer.state });
      }),
      { seed: 20_261_123, numRuns: 400 },
    );
  });
});
