import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import { AcidFadeCalculator, AmberFadeCalculator, FadeCalculator } from 'csgo-fade-percentage-calculator';
import Decimal from 'decimal.js';
import { z } from 'zod';
import { englishNames } from '../catalog/generate.ts';
import { EXTERIOR_NAMES, EXTERIOR_WEAR_RANGES, EXTERIORS, PHASE_VERSIONS, type PhaseVersion, versionFromPhaseLabel } from '../catalog/identity.ts';
import FADE_SKIN_ROWS from './fade-skins.json';
import type { ItemIdentity, ItemState } from './selector.ts';

/**
 * docs/design.md §14 "Item insights": what an item's state means for its price, computed from the selector
 * alone (no I/O), so the inspect-decode answer and inventory records explain the same item the
 * same way. `insights` always travels beside `item` and `state`, never inside `state`: the selector
 * still passes to renders and viewer sessions unchanged.
 *
 *  - phase: the Doppler / Gamma Doppler phase of the paint index, as docs/design.md §9's price versions.
 *  - fade_percentage: csgo-fade-percentage-calculator's percentage for the paint seed (Fade, Amber
 *    Fade, Acid Fade on the weapons it covers; it covers no gloves), rounded half-even to one place.
 *  - float: the exterior of the wear and where the wear sits in the skin's own range (cs2-lib),
 *    computed exactly on the decimal text of the numbers (never a float division or float rounding).
 *
 * Decisions docs/design.md leaves open, documented in the schema below:
 *  - `float` is null when the state has no wear, and also when cs2-lib knows no wear range for the
 *    (definition, paint) pair (vanilla knives, unknown paints): a percentile needs the range.
 *  - `percentile` is clamped to 0…1. A float32 wear at the very bottom of a range is a hair below the
 *    decimal minimum (0.06 is stored as 0.0599999986…), which must read as the best float, "0.0000",
 *    not "-0.0000"; a crafted certificate outside the range reads as the nearest end.
 *  - A seed the package has no entry for (1000 on a weapon outside its trade-up list) is null.
 */

// ---------------------------------------------------------------------------------------------
// Schema

export const floatInsightSchema = z
  .object({
    wear_name: z
      .enum(EXTERIORS.map((exterior) => EXTERIOR_NAMES[exterior]) as [string, ...string[]])
      .describe('The English exterior of the wear: Factory New, Minimal Wear, Field-Tested, Well-Worn or Battle-Scarred'),
    min: z.number().describe('The skin’s lowest possible wear (from @ianlucas/cs2-lib)'),
    max: z.number().describe('The skin’s highest possible wear (from @ianlucas/cs2-lib)'),
    percentile: z
      .string()
      .describe('(wear − min) / (max − min) as a decimal string with 4 places, clamped to 0…1: "0.0000" is the best float the skin can have'),
  })
  .describe('Where the wear sits in the skin’s range; null without a wear, or when the skin’s wear range is unknown (vanilla knives, unknown paints)');

export const insightsSchema = z
  .object({
    phase: z
      .enum(PHASE_VERSIONS)
      .nullable()
      .describe(
        'The Doppler / Gamma Doppler phase of the paint index, as the price version names (phase-1…phase-4, ruby, sapphire, black-pearl, emerald); null for every other paint',
      ),
    fade_percentage: z
      .string()
      .nullable()
      .describe(
        'Fade, Amber Fade and Acid Fade on the weapons csgo-fade-percentage-calculator covers (no gloves): its percentage for the paint seed, rounded half-even to one decimal ("93.4"); else null',
      ),
    float: floatInsightSchema.nullable(),
  })
  .describe('docs/design.md §14 item insights, derived from item and state; never part of the item selector');

export type FloatInsight = z.infer<typeof floatInsightSchema>;
export type ItemInsights = { phase: PhaseVersion | null; fade_percentage: string | null; float: FloatInsight | null };

// ---------------------------------------------------------------------------------------------
// Tables from the libraries, built once on first use (scanning 25 000 items costs a few ms)

let phaseByPaintIndex: Map<number, PhaseVersion> | undefined;

/** The price version of a Doppler / Gamma Doppler paint ("phase-2", "ruby", …), else null. */
export function phaseVersionOfPaint(paintIndex: number | null | undefined): PhaseVersion | null {
  if (paintIndex === undefined || paintIndex === null) return null;
  if (!phaseByPaintIndex) {
    phaseByPaintIndex = new Map();
    for (const item of CS2_ITEMS) {
      if (!item.altName || item.index === undefined) continue;
      const version = versionFromPhaseLabel(item.altName);
      if (version !== null && version !== 'default') phaseByPaintIndex.set(item.index, version as PhaseVersion);
    }
  }
  return phaseByPaintIndex.get(paintIndex) ?? null;
}

const skinKey = (definitionIndex: number, paintIndex: number) => definitionIndex * 100_000 + paintIndex;

export type WearRange = { min: number; max: number };
let wearRanges: Map<number, WearRange> | undefined;

/** The wear range cs2-lib gives a (definition, paint) skin of a weapon, knife or gloves, else undefined. */
export function wearRangeOf(definitionIndex: number, paintIndex: number): WearRange | undefined {
  if (!wearRanges) {
    wearRanges = new Map();
    for (const item of CS2_ITEMS) {
      if (item.def === undefined || item.index === undefined || item.wearMin === undefined || item.wearMax === undefined) continue;
      if (item.type !== 'weapon' && item.type !== 'melee' && item.type !== 'glove') continue;
      wearRanges.set(skinKey(item.def, item.index), { min: item.wearMin, max: item.wearMax });
    }
  }
  return wearRanges.get(skinKey(definitionIndex, paintIndex));
}

/** The package's public surface, shared by its three calculators. */
type FadeCalculatorModule = {
  // biome-ignore lint/complexity/noBannedTypes: the library declares String[]; the structural type must say the same to accept it
  getSupportedWeapons(): Array<String>;
  getFadePercentages(weapon: string): Array<{ seed: number; percentage: number }>;
};
const FADE_CALCULATORS: Record<string, FadeCalculatorModule> = {
  Fade: FadeCalculator,
  'Amber Fade': AmberFadeCalculator,
  'Acid Fade': AcidFadeCalculator,
};

type FadeSkin = { calculator: FadeCalculatorModule; weapon: string };
let fadeSkins: Map<number, FadeSkin> | undefined;
/**
 * The package's percentages per calculator and weapon, already rounded (index = seed): the package
 * recomputes all 1 000 seeds on every call, and rounding once per seed keeps decimal.js off the hot path.
 */
const roundedPercentages = new Map<FadeCalculatorModule, Map<string, string[]>>();

/** One row of shared/inspect/fade-skins.json: definition, paint, finish, the package's weapon name. */
export type FadeSkinRow = [definitionIndex: number, paintIndex: number, finish: string, weapon: string];

/**
 * Fade skins the package covers, from the lib: the package names weapons in English ("Karambit",
 * "SSG 08") and the Fade paint index differs per weapon (38 on knives, 1026 on the AWP), so both come
 * from cs2-lib's English names, "<weapon> | Fade|Amber Fade|Acid Fade". Loading those names costs
 * ~0.1 s and ~20 MB, so the rows are generated once into fade-skins.json (`npm run lookups:generate`)
 * and test/catalog/generated-lookups.test.ts checks the file against this function.
 */
export function computeFadeSkins(): FadeSkinRow[] {
  const rows: FadeSkinRow[] = [];
  const names = englishNames();
  for (const item of CS2_ITEMS) {
    if (item.def === undefined || item.index === undefined || (item.type !== 'weapon' && item.type !== 'melee')) continue;
    const name = names[String(item.id)]?.name;
    const separator = name?.lastIndexOf(' | ') ?? -1;
    if (!name || separator < 0) continue;
    const finish = name.slice(separator + 3);
    const weapon = name.slice(0, separator);
    const calculator = FADE_CALCULATORS[finish];
    if (calculator?.getSupportedWeapons().includes(weapon)) rows.push([item.def, item.index, finish, weapon]);
  }
  return rows.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

function fadeSkinOf(definitionIndex: number, paintIndex: number): FadeSkin | undefined {
  if (!fadeSkins) {
    fadeSkins = new Map();
    for (const [def, paint, finish, weapon] of FADE_SKIN_ROWS as FadeSkinRow[])
      fadeSkins.set(skinKey(def, paint), { calculator: FADE_CALCULATORS[finish]!, weapon });
  }
  return fadeSkins.get(skinKey(definitionIndex, paintIndex));
}

/** docs/design.md §14: half-even to one place, from the number's shortest round-trip text (decimal.js reads it so). */
function fadePercentagesOf(skin: FadeSkin): string[] {
  let byWeapon = roundedPercentages.get(skin.calculator);
  if (!byWeapon) roundedPercentages.set(skin.calculator, (byWeapon = new Map()));
  let percentages = byWeapon.get(skin.weapon);
  if (!percentages) {
    percentages = skin.calculator.getFadePercentages(skin.weapon).map((entry) => new Decimal(entry.percentage).toFixed(1, Decimal.ROUND_HALF_EVEN));
    byWeapon.set(skin.weapon, percentages);
  }
  return percentages;
}

// ---------------------------------------------------------------------------------------------
// Insights

function fadePercentageOf(item: ItemIdentity | null, state: ItemState): string | null {
  if (!item || state.paint_index === undefined || state.paint_seed === undefined) return null;
  const skin = fadeSkinOf(item.definition_index, state.paint_index);
  if (!skin) return null;
  return fadePercentagesOf(skin)[state.paint_seed] ?? null;
}

function wearNameOf(wear: number): string {
  const exterior = EXTERIORS.find((candidate) => wear < EXTERIOR_WEAR_RANGES[candidate][1]) ?? 'battle-scarred';
  return EXTERIOR_NAMES[exterior];
}

const POWERS_OF_TEN = Array.from({ length: 48 }, (_, exponent) => 10n ** BigInt(exponent));
const powerOfTen = (exponent: number) => POWERS_OF_TEN[exponent] ?? 10n ** BigInt(exponent);
const PERCENTILE_ONE = 10_000n;

/**
 * A non-negative number as an integer and a scale (0.2801 → 2801n, 4), read from its shortest
 * round-trip text: the decimal value decimal.js would read too. String() writes tiny values as 1e-7.
 */
function unscaledOf(value: number): { digits: bigint; scale: number } {
  let text = String(value);
  if (text.includes('e')) text = new Decimal(value).toFixed();
  const point = text.indexOf('.');
  if (point < 0) return { digits: BigInt(text), scale: 0 };
  return { digits: BigInt(text.slice(0, point) + text.slice(point + 1)), scale: text.length - point - 1 };
}

/** A wear range's ends as integers at one scale, built once per range. */
type ExactRange = { low: bigint; span: bigint; scale: number };
const exactRanges = new WeakMap<WearRange, ExactRange>();

function exactRangeOf(range: WearRange): ExactRange {
  let exact = exactRanges.get(range);
  if (!exact) {
    const low = unscaledOf(range.min);
    const high = unscaledOf(range.max);
    const scale = Math.max(low.scale, high.scale);
    const lowAt = low.digits * powerOfTen(scale - low.scale);
    exact = { low: lowAt, span: high.digits * powerOfTen(scale - high.scale) - lowAt, scale };
    exactRanges.set(range, exact);
  }
  return exact;
}

/**
 * (wear − min) / (max − min), rounded half-even to 4 places and clamped to 0…1, exactly as decimal
 * arithmetic on the numbers' shortest texts gives it (test/inspect/insights.test.ts checks it against
 * decimal.js on many wears). Computed in doubles first: their error here is below 1e-10 of a
 * 0.0001 step (a few ulps of a value under 10 000, plus half an ulp of the wear between the double
 * and its text, widened by 1 / span for spans of at least 1e-4), so whenever the scaled value is not
 * within 1e-6 of a rounding tie the double rounds the same way as the exact value; near a tie, the
 * exact integer path decides. Most wears never reach it, and insights stay cheap beside a decode.
 */
export function wearPercentile(wear: number, range: WearRange): string {
  const span = range.max - range.min;
  if (!(span >= 1e-4)) return exactWearPercentile(wear, range);
  const scaled = ((wear - range.min) / span) * 10_000;
  if (scaled <= 0) return '0.0000';
  if (scaled >= 10_000) return '1.0000';
  const whole = Math.floor(scaled);
  const fraction = scaled - whole;
  if (Math.abs(fraction - 0.5) < 1e-6) return exactWearPercentile(wear, range);
  const steps = fraction > 0.5 ? whole + 1 : whole;
  return steps >= 10_000 ? '1.0000' : `0.${String(steps).padStart(4, '0')}`;
}

/**
 * (wear − min) / (max − min), rounded half-even to 4 places and clamped to 0…1, exactly: the wear
 * and the range ends become BigInt integers at one scale and the integer quotient's remainder decides
 * the rounding, as shared/util/decimal.ts compares money. Never a float division (a tie such as
 * 0.00125 must give "0.0012"). Not decimal.js here: its division costs more than decoding the whole
 * certificate (issue 20's bench); test/inspect/insights.test.ts checks this against decimal.js on many wears.
 */
function exactWearPercentile(wear: number, range: WearRange): string {
  const exact = exactRangeOf(range);
  const w = unscaledOf(wear);
  const scale = Math.max(w.scale, exact.scale);
  const widen = powerOfTen(scale - exact.scale);
  const offset = w.digits * powerOfTen(scale - w.scale) - exact.low * widen;
  const span = exact.span * widen;
  if (offset <= 0n) return '0.0000';
  if (offset >= span) return '1.0000';
  const scaled = offset * PERCENTILE_ONE;
  let quotient = scaled / span;
  const twiceRemainder = 2n * (scaled - quotient * span);
  if (twiceRemainder > span || (twiceRemainder === span && (quotient & 1n) === 1n)) quotient += 1n;
  // 0 ≤ quotient ≤ 10 000 here.
  return quotient === PERCENTILE_ONE ? '1.0000' : `0.${String(quotient).padStart(4, '0')}`;
}

function floatOf(item: ItemIdentity | null, state: ItemState): FloatInsight | null {
  if (!item || state.wear === undefined || state.paint_index === undefined) return null;
  const range = wearRangeOf(item.definition_index, state.paint_index);
  if (!range || !(range.max > range.min)) return null;
  return { wear_name: wearNameOf(state.wear), min: range.min, max: range.max, percentile: wearPercentile(state.wear, range) };
}

/**
 * docs/design.md §14 insights of an item selector. `item` may be null (an inventory asset neither the
 * certificate nor the catalog identifies): the phase still follows the paint index; fade and float
 * need the definition and are null.
 */
export function itemInsights(item: ItemIdentity | null, state: ItemState): ItemInsights {
  return {
    phase: phaseVersionOfPaint(state.paint_index),
    fade_percentage: fadePercentageOf(item, state),
    float: floatOf(item, state),
  };
}
