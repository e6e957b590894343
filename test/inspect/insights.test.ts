import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { AcidFadeCalculator, AmberFadeCalculator, FadeCalculator } from 'csgo-fade-percentage-calculator';
import Decimal from 'decimal.js';
import { encodeCertificate, type ItemIdentity, type ItemInsights, itemInsights, validateItemSelector, wearRangeOf } from '../../shared/inspect/index.ts';
import { wearPercentile } from '../../shared/inspect/insights.ts';
import { createTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * docs/design.md §14 "Item insights": phase, fade percentage and float percentile, as a pure function of the
 * item selector (shared/inspect/insights.ts) and in the inspect-decode answer over real Postgres and
 * Redis. Fade percentages are checked against csgo-fade-percentage-calculator itself, called here,
 * and rounded half-even with decimal.js the way docs/design.md §14 says; a few values are spelled out by hand.
 */

const weapon = (definition_index: number): ItemIdentity => ({ family: 'weapon', definition_index });
const knife = (definition_index: number): ItemIdentity => ({ family: 'knife', definition_index });
const gloves = (definition_index: number): ItemIdentity => ({ family: 'gloves', definition_index });

// Definition and paint indexes from @ianlucas/cs2-lib (the Fade paint differs per weapon).
const KARAMBIT = 507;
const FADE_SKINS = [
  { calculator: FadeCalculator, weapon: 'Karambit', item: knife(KARAMBIT), paint: 38 },
  { calculator: FadeCalculator, weapon: 'Talon Knife', item: knife(523), paint: 38 },
  { calculator: FadeCalculator, weapon: 'Glock-18', item: weapon(4), paint: 38 },
  { calculator: FadeCalculator, weapon: 'AWP', item: weapon(9), paint: 1026 },
  { calculator: FadeCalculator, weapon: 'M4A1-S', item: weapon(60), paint: 1177 },
  { calculator: FadeCalculator, weapon: 'MP7', item: weapon(33), paint: 752 },
  { calculator: FadeCalculator, weapon: 'UMP-45', item: weapon(24), paint: 879 },
  { calculator: FadeCalculator, weapon: 'R8 Revolver', item: weapon(64), paint: 522 },
  { calculator: AmberFadeCalculator, weapon: 'AUG', item: weapon(8), paint: 246 },
  { calculator: AmberFadeCalculator, weapon: 'P2000', item: weapon(32), paint: 246 },
  { calculator: AmberFadeCalculator, weapon: 'R8 Revolver', item: weapon(64), paint: 523 },
  { calculator: AcidFadeCalculator, weapon: 'SSG 08', item: weapon(40), paint: 253 },
];
const SEEDS = [0, 1, 7, 412, 500, 763, 999];

/** The package's percentage rounded as docs/design.md §14 says: half-even to one place, from its decimal text. */
const packageValue = (calculator: { getFadePercentage(weapon: string, seed: number): { percentage: number } }, name: string, seed: number) =>
  new Decimal(calculator.getFadePercentage(name, seed).percentage).toFixed(1, Decimal.ROUND_HALF_EVEN);

describe('itemInsights: fade_percentage', () => {
  test('equals the package’s own percentage, rounded half-even to one decimal, for several seeds per weapon', () => {
    for (const skin of FADE_SKINS) {
      for (const seed of SEEDS) {
        const expected = packageValue(skin.calculator, skin.weapon, seed);
        const actual = itemInsights(skin.item, { paint_index: skin.paint, paint_seed: seed, wear: 0.01 }).fade_percentage;
        expect({ weapon: skin.weapon, seed, actual }).toEqual({ weapon: skin.weapon, seed, actual: expected });
        expect(actual).toMatch(/^(8\d|9\d|100)\.\d$/);
      }
    }
  });

  test('hand-checked values: a 100 % Karambit (seed 412) and an 86.9 % Glock-18 (seed 999, 86.9168…)', () => {
    expect(FadeCalculator.getFadePercentage('Karambit', 412).percentage).toBe(100);
    expect(itemInsights(knife(KARAMBIT), { paint_index: 38, paint_seed: 412 }).fade_percentage).toBe('100.0');
    expect(FadeCalculator.getFadePercentage('Glock-18', 999).percentage).toBeCloseTo(86.9169, 4);
    expect(itemInsights(weapon(4), { paint_index: 38, paint_seed: 999 }).fade_percentage).toBe('86.9');
    // The worst rotation is the package's floor of 80 %.
    const worst = FadeCalculator.getFadePercentages('Karambit').find((entry) => entry.percentage === 80)!;
    expect(itemInsights(knife(KARAMBIT), { paint_index: 38, paint_seed: worst.seed }).fade_percentage).toBe('80.0');
  });

  test('is null without a seed, on a seed the package has no entry for, on gloves, on other paints and without an item', () => {
    expect(itemInsights(knife(KARAMBIT), { paint_index: 38 }).fade_percentage).toBeNull();
    // The package lists seeds 0–999 for knives, 0–1000 for weapons in a trade-up collection (the AWP).
    expect(itemInsights(knife(KARAMBIT), { paint_index: 38, paint_seed: 1000 }).fade_percentage).toBeNull();
    expect(itemInsights(weapon(9), { paint_index: 1026, paint_seed: 1000 }).fade_percentage).toBe(packageValue(FadeCalculator, 'AWP', 1000));
    // Specialist Gloves | Fade: the package covers no gloves.
    expect(itemInsights(gloves(5034), { paint_index: 10063, paint_seed: 412 }).fade_percentage).toBeNull();
    // A Doppler Karambit, and a Fade paint index on a weapon whose Fade has another index.
    expect(itemInsights(knife(KARAMBIT), { paint_index: 418, paint_seed: 412 }).fade_percentage).toBeNull();
    expect(itemInsights(weapon(9), { paint_index: 38, paint_seed: 412 }).fade_percentage).toBeNull();
    expect(itemInsights(null, { paint_index: 38, paint_seed: 412 }).fade_percentage).toBeNull();
  });
});

describe('itemInsights: phase', () => {
  test('names every Doppler and Gamma Doppler phase as docs/design.md §9’s versions', () => {
    const phases: [number, ItemInsights['phase']][] = [
      [415, 'ruby'],
      [416, 'sapphire'],
      [417, 'black-pearl'],
      [418, 'phase-1'],
      [419, 'phase-2'],
      [420, 'phase-3'],
      [421, 'phase-4'],
      [568, 'emerald'],
      [569, 'phase-1'],
      [570, 'phase-2'],
      [571, 'phase-3'],
      [572, 'phase-4'],
    ];
    for (const [paint, phase] of phases) expect({ paint, phase: itemInsights(knife(KARAMBIT), { paint_index: paint }).phase }).toEqual({ paint, phase });
    // Glock-18 | Gamma Doppler has its own paint indexes.
    expect(itemInsights(weapon(4), { paint_index: 1119 }).phase).toBe('emerald');
    expect(itemInsights(weapon(4), { paint_index: 1121 }).phase).toBe('phase-2');
  });

  test('is null for other paints, no paint, and follows the paint index even without an item', () => {
    expect(itemInsights(knife(KARAMBIT), { paint_index: 38 }).phase).toBeNull();
    expect(itemInsights(knife(KARAMBIT), {}).phase).toBeNull();
    expect(itemInsights(null, { paint_index: 415 }).phase).toBe('ruby');
  });
});

describe('itemInsights: float', () => {
  // Specialist Gloves | Fade: wear range 0.06–0.80 in cs2-lib.
  const SPECIALIST_FADE = { item: gloves(5034), paint: 10063 };
  const floatOf = (wear: number | undefined, item: ItemIdentity | null = SPECIALIST_FADE.item, paint: number | undefined = SPECIALIST_FADE.paint) =>
    itemInsights(item, { ...(paint === undefined ? {} : { paint_index: paint }), ...(wear === undefined ? {} : { wear }) }).float;

  test('hand-computed percentiles on a 0.06–0.80 skin: 0.0701 → 0.0101 / 0.74 = 0.01364… → "0.0136"; 0.1501 → "0.1218"', () => {
    expect(floatOf(0.0701)).toEqual({ wear_name: 'Minimal Wear', min: 0.06, max: 0.8, percentile: '0.0136' });
    // A certificate's float32 (0.07010000199…) gives the same four places.
    expect(floatOf(Math.fround(0.0701))!.percentile).toBe('0.0136');
    // 0.0901 / 0.74 = 0.121756…
    expect(floatOf(0.1501)).toEqual({ wear_name: 'Field-Tested', min: 0.06, max: 0.8, percentile: '0.1218' });
    // 0.37 / 0.74 = 0.5 exactly.
    expect(floatOf(0.43)).toEqual({ wear_name: 'Well-Worn', min: 0.06, max: 0.8, percentile: '0.5000' });
  });

  test('the best and worst float of the range are "0.0000" and "1.0000", float32 rounding included', () => {
    expect(floatOf(0.06)!.percentile).toBe('0.0000');
    // float32(0.06) = 0.0599999986…, a hair under the range: still the best float, not "-0.0000".
    expect(floatOf(Math.fround(0.06))!.percentile).toBe('0.0000');
    expect(floatOf(Math.fround(0.8))).toEqual({ wear_name: 'Battle-Scarred', min: 0.06, max: 0.8, percentile: '1.0000' });
  });

  test('rounds exact decimals half-even: 0.0001 / 0.08 = 0.00125 → "0.0012", 0.0003 / 0.08 = 0.00375 → "0.0038"', () => {
    expect(floatOf(0.0001, knife(KARAMBIT), 418)).toEqual({ wear_name: 'Factory New', min: 0, max: 0.08, percentile: '0.0012' });
    expect(floatOf(0.0003, knife(KARAMBIT), 418)!.percentile).toBe('0.0038');
  });

  test('equals decimal.js’s exact (wear − min) / (max − min), half-even to 4 places, on 20 000 wears over every kind of range', () => {
    const Exact = Decimal.clone({ precision: 60 });
    const ranges = [wearRangeOf(KARAMBIT, 38)!, wearRangeOf(5034, 10063)!, wearRangeOf(9, 279)!, wearRangeOf(40, 253)!, wearRangeOf(7, 282)!];
    let seed = 20;
    const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    for (let i = 0; i < 20_000; i += 1) {
      const range = ranges[i % ranges.length]!;
      // float32 wears like certificates carry, short decimals like Steam's property 2, and tiny ones (1e-7).
      const raw = range.min + random() * (range.max - range.min);
      const wear = i % 3 === 0 ? Math.fround(raw) : i % 3 === 1 ? Number(raw.toFixed(4)) : raw * 1e-5;
      const exact = new Exact(wear).minus(range.min).dividedBy(new Exact(range.max).minus(range.min));
      const expected = Exact.min(1, Exact.max(0, exact)).toFixed(4, Decimal.ROUND_HALF_EVEN);
      expect({ wear, range, percentile: wearPercentile(wear, range) }).toEqual({ wear, range, percentile: expected });
    }
  });

  test('names the exterior by Steam’s boundaries (each exterior starts at its lower bound)', () => {
    const names = [0, 0.0699, 0.07, 0.1499, 0.15, 0.3799, 0.38, 0.4499, 0.45, 1].map(
      (wear) => floatOf(wear, weapon(9), 1026 /* AWP | Fade, 0–0.08 */)?.wear_name,
    );
    expect(names).toEqual([
      'Factory New',
      'Factory New',
      'Minimal Wear',
      'Minimal Wear',
      'Field-Tested',
      'Field-Tested',
      'Well-Worn',
      'Well-Worn',
      'Battle-Scarred',
      'Battle-Scarred',
    ]);
  });

  test('is null without a wear, without a paint, for a vanilla knife, and without an item', () => {
    expect(floatOf(undefined)).toBeNull();
    expect(floatOf(0.2, knife(KARAMBIT), undefined)).toBeNull();
    expect(floatOf(0.2, knife(KARAMBIT), 0)).toBeNull();
    expect(floatOf(0.2, null)).toBeNull();
  });
});

describe('POST /v2/inspect/decode: insights beside item and state', () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = createTestApp();
    key = (await workspaceWithKey(t, { scopes: ['inspect:read'] })).key;
  }, 30_000);

  afterAll(async () => {
    await t?.close();
  });

  const decode = (link: string) => t.request('/v2/inspect/decode', { method: 'POST', headers: { 'x-api-key': key }, json: { link } });
  type Answer = { item: ItemIdentity; state: Record<string, unknown>; insights: ItemInsights };

  test('a Karambit Fade certificate answers its fade percentage and float; state stays the selector state', async () => {
    const state = { paint_index: 38, paint_seed: 412, wear: 0.0123 };
    const response = await decode(
      `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20${encodeCertificate({ item: { definition_index: KARAMBIT }, state }, { key: 0x3c })}`,
    );
    expect(response.status).toBe(200);
    const body = (await response.json()) as Answer;
    // The certificate holds float32(0.0123) = 0.01229999959…, so 0.15374999… → "0.1537" (0.0123 itself would be a tie, "0.1538").
    expect(body.insights).toEqual({ phase: null, fade_percentage: '100.0', float: { wear_name: 'Factory New', min: 0, max: 0.08, percentile: '0.1537' } });
    expect(body.state).not.toHaveProperty('insights');
    expect(Object.keys(body.state).sort()).toEqual(['paint_index', 'paint_seed', 'wear']);
    // Still passes to renders and viewer sessions as it is.
    expect(validateItemSelector(body)).toEqual({ ok: true, selector: { item: body.item, state: body.state as never } });
  });

  test('a Ruby answers phase "ruby"; a sticker has all insights null', async () => {
    const ruby = (await (
      await decode(encodeCertificate({ item: { definition_index: KARAMBIT }, state: { paint_index: 415, paint_seed: 5, wear: 0.0087 } }))
    ).json()) as Answer;
    expect(ruby.insights.phase).toBe('ruby');
    expect(ruby.insights.fade_percentage).toBeNull();
    expect(ruby.insights.float).toMatchObject({ wear_name: 'Factory New', min: 0, max: 0.08 });
    const sticker = (await (
      await decode(encodeCertificate({ item: { definition_index: 1209 }, state: { stickers: [{ slot: 0, sticker_id: 76 }] } }))
    ).json()) as Answer;
    expect(sticker.insights).toEqual({ phase: null, fade_percentage: null, float: null });
  });
});
