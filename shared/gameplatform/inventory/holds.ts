import { isObject } from '../steam-client.ts';
import { flag, type InventoryContext, stringOf } from './steam-community.ts';

/**
 * Trade holds and trade protection as Steam writes them on an asset's description (docs/design.md §17): the
 * instant the item becomes tradable again, and whether it is protected and why.
 *
 * Raw lines this reads (owner view; `owner_descriptions` and `descriptions`, any `value`):
 *   {"type":"bbcode","value":"⇆ This item is trade-protected and cannot be consumed, modified, or transferred until [date]1786384800[/date]"}
 *   {"type":"html","value":"Tradable/Marketable After Oct 01, 2026 (7:00:00) GMT","color":"ff4040"}
 *   {"type":"html","value":"Tradable/Marketable After 27 Aug, 2026 (14:00:00) GMT"}
 *   {"type":"html","value":"Tradable/Marketable After 29 Jun @ 7:00am"}        (rendered since 2026-06-24)
 * plus the description's `sealed` (1/true: protected), `sealed_type` (1: listed on the Community
 * Market) and `item_expiration` (an ISO date-time).
 */

export const PROTECTION_REASONS = ['trade_protected', 'market_listing'] as const;
export type ProtectionReason = (typeof PROTECTION_REASONS)[number];
export type Protection = { protected: boolean; reason: ProtectionReason | null; until: string | null; context: InventoryContext };

export type HoldReading = {
  /** The instant the item becomes tradable (any hold, protected or not), ISO 8601, else null. */
  trade_hold_until: string | null;
  protection: Protection;
  /** A hold or protection text was there but no form gave its instant (counted, never an error). */
  unreadable: boolean;
};

/** Holds last at most 8 days: a year-less date is the nearest such instant no more than 2 days past. */
const YEARLESS_PAST_WINDOW_MS = 2 * 86_400_000;

const MONTHS: Record<string, number> = { jan: 0, feb: 1, mar: 2, apr: 3, may: 4, jun: 5, jul: 6, aug: 7, sep: 8, oct: 9, nov: 10, dec: 11 };
const MON = '(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)';
// Where a hold's date follows: "Tradable After", "Tradable/Marketable After", "… transferred until" (and
// "… trade-protected until", which clients have recorded too).
const LEAD = '(?:tradable(?:\\s*/\\s*marketable)?\\s+after|until)\\s*:?\\s*';
/** Form 1: the exact instant, in any language. */
const DATE_TOKEN = /\[date\]\s*(\d{1,12})\s*\[\/date\]/i;
/** Form 2: `Mon D, YYYY (H:MM:SS)` or `D Mon, YYYY (H:MM:SS)`, with or without ` GMT`. */
const DATED = new RegExp(
  `${LEAD}(?:${MON}\\.?\\s+(\\d{1,2})|(\\d{1,2})\\s+${MON}\\.?),?\\s+(\\d{4})\\s*\\(?\\s*(\\d{1,2}):(\\d{2})(?::(\\d{2}))?\\s*\\)?`,
  'i',
);
/** Form 3: `D Mon @ h:mmam|pm` (or `Mon D @ …`), no year. */
const YEARLESS = new RegExp(`${LEAD}(?:(\\d{1,2})\\s+${MON}\\.?|${MON}\\.?\\s+(\\d{1,2}))\\s*@\\s*(\\d{1,2}):(\\d{2})\\s*([ap])\\.?m\\.?`, 'i');
/** Text that speaks of a hold or protection: if none of the forms reads it, it is counted as unreadable. */
const HOLD_WORDS = /tradable(?:\s*\/\s*marketable)?\s+after|transferred until|trade-protected|\[date\]/i;
const TRADE_PROTECTED = /trade-protected/i;
const MARKET_LISTING = /listed on the (?:steam )?community market/i;
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})$/;

/** A line's text as read: HTML tags, a leading `⇆` and odd spacing (NBSP, newlines, runs) ignored. */
const ODD_SPACE = /[\t\n\r\f\v\u00a0\u200b\u2009\u202f]| {2}/;
function plainText(value: string): string {
  let text = value.includes('<') ? value.replace(/<[^>]*>/g, ' ') : value;
  // Most lines are already plain: tested first, so they are not copied.
  if (ODD_SPACE.test(text)) text = text.replace(/[\s\u00a0\u200b\u2009\u202f]+/g, ' ');
  text = text.trim();
  return text.startsWith('⇆') ? text.slice(1).trimStart() : text;
}

function utcInstant(year: number, month: number, day: number, hour: number, minute: number, second: number): number | null {
  if (hour > 23 || minute > 59 || second > 59 || day < 1) return null;
  const at = Date.UTC(year, month, day, hour, minute, second);
  // Feb 30 and the like roll into the next month: not a date.
  return Number.isNaN(at) || new Date(at).getUTCDate() !== day ? null : at;
}

// Each form needs a character most lines lack ('[', ':', '@'): tested first, so a line that cannot
// match is not scanned by the expression (the same answers, fewer scans).
function fromDateToken(text: string): number | null {
  if (!text.includes('[')) return null;
  const match = DATE_TOKEN.exec(text);
  if (!match) return null;
  const at = Number(match[1]) * 1000;
  return Number.isSafeInteger(at) && at > 0 && at < 8.64e15 ? at : null;
}

function fromDated(text: string): number | null {
  if (!text.includes(':')) return null;
  const match = DATED.exec(text);
  if (!match) return null;
  const [, monthFirst, dayAfter, dayFirst, monthAfter, year, hour, minute, second] = match;
  const month = MONTHS[(monthFirst ?? monthAfter)!.toLowerCase()]!;
  return utcInstant(Number(year), month, Number(dayAfter ?? dayFirst), Number(hour), Number(minute), Number(second ?? 0));
}

/** The nearest instant with this day and time (GMT) that is not more than 2 days before `readAt`. */
function fromYearless(text: string, readAt: number): number | null {
  if (!text.includes('@')) return null;
  const match = YEARLESS.exec(text);
  if (!match) return null;
  const [, dayFirst, monthAfter, monthFirst, dayAfter, hour12, minute, half] = match;
  const hourOnClock = Number(hour12);
  if (hourOnClock < 1 || hourOnClock > 12) return null;
  const hour = (hourOnClock % 12) + (half!.toLowerCase() === 'p' ? 12 : 0);
  const month = MONTHS[(monthAfter ?? monthFirst)!.toLowerCase()]!;
  const day = Number(dayFirst ?? dayAfter);
  const earliest = readAt - YEARLESS_PAST_WINDOW_MS;
  const year = new Date(readAt).getUTCFullYear();
  for (const candidate of [year - 1, year, year + 1, year + 4]) {
    // (year + 4: 29 Feb read in a year whose neighbours have none.)
    const at = utcInstant(candidate, month, day, hour, Number(minute), 0);
    if (at !== null && at >= earliest) return at;
  }
  return null;
}

function fromItemExpiration(value: unknown): number | null {
  if (typeof value !== 'string' || !ISO_DATE_TIME.test(value)) return null;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : at;
}

/**
 * Whether a line can speak of a hold, protection or a listing: one cheap test, so the exterior,
 * sticker and charm lines every description has are not cleaned and matched form by form.
 */
const MAY_HOLD = /\[date\]|after|until|protected|listed on/i;
function mayHold(value: string): boolean {
  return MAY_HOLD.test(value);
}

/** The texts of the lines that may speak of a hold, owner descriptions first. */
function textsOf(description: Record<string, unknown>): string[] {
  const texts: string[] = [];
  for (const field of ['owner_descriptions', 'descriptions'] as const) {
    const lines = description[field];
    if (!Array.isArray(lines)) continue;
    for (const line of lines) if (isObject(line) && typeof line.value === 'string' && mayHold(line.value)) texts.push(plainText(line.value));
  }
  return texts;
}

/** The instant the texts give, the forms tried in docs/design.md §17's order (each over every line before the next). */
function holdInstantOf(texts: readonly string[], readAt: number): number | null {
  for (const text of texts) {
    const at = fromDateToken(text);
    if (at !== null) return at;
  }
  for (const text of texts) {
    const at = fromDated(text);
    if (at !== null) return at;
  }
  for (const text of texts) {
    const at = fromYearless(text, readAt);
    if (at !== null) return at;
  }
  return null;
}

/**
 * The hold and protection of one description, read from `context` at `readAt` (the year-less form
 * needs it). `protected` when the description is `sealed`, its text says trade-protected, or it was
 * read from context 16; `until` is the hold instant when protected (else null), and
 * `trade_hold_until` the same instant for any hold.
 */
export function readHold(description: Record<string, unknown>, context: InventoryContext, readAt: Date): HoldReading {
  const texts = textsOf(description);
  let at = holdInstantOf(texts, readAt.getTime());
  at ??= fromItemExpiration(description.item_expiration);
  const listed = stringOf(description.sealed_type) === '1' || texts.some((text) => MARKET_LISTING.test(text));
  const isProtected = flag(description.sealed) || context === 16 || texts.some((text) => TRADE_PROTECTED.test(text));
  const until = at === null ? null : new Date(at).toISOString();
  return {
    trade_hold_until: until,
    protection: {
      protected: isProtected,
      reason: isProtected ? (listed ? 'market_listing' : 'trade_protected') : null,
      until: isProtected ? until : null,
      context,
    },
    unreadable: at === null && texts.some((text) => HOLD_WORDS.test(text)),
  };
}

/** The instant of the first line with a hold (forms 1–3 of docs/design.md §17), else null. */
export function parseTradeHold(lines: unknown[], readAt: Date = new Date()): string | null {
  const at = holdInstantOf(textsOf({ owner_descriptions: lines }), readAt.getTime());
  return at === null ? null : new Date(at).toISOString();
}

/**
 * Records stored before protection existed (issue 30) lack it. Snapshots are immutable and their
 * descriptions were not kept, so such a record gets what it can say for itself when read: read from
 * context 2 (the only one then), not known to be protected.
 */
export const UNKNOWN_PROTECTION: Protection = { protected: false, reason: null, until: null, context: 2 };
