import { isObject } from '../steam-client.ts';

/**
 * Trade holds as Steam writes them in an asset's descriptions (DESIGN 11): the instant an item
 * becomes tradable again.
 */

const MONTHS: Record<string, number> = { Jan: 0, Feb: 1, Mar: 2, Apr: 3, May: 4, Jun: 5, Jul: 6, Aug: 7, Sep: 8, Oct: 9, Nov: 10, Dec: 11 };
// "Tradable After Jun 20, 2025 (7:00:00) GMT" and the 2025 form "Tradable/Marketable After …".
const TRADE_HOLD = /Tradable(?:\/Marketable)? After ([A-Z][a-z]{2}) (\d{1,2}), (\d{4}) \((\d{1,2}):(\d{2}):(\d{2})\) GMT/;

/** The instant of a "Tradable After <date> (<time>) GMT" line, else null. */
export function parseTradeHold(lines: unknown[]): string | null {
  for (const line of lines) {
    if (!isObject(line) || typeof line.value !== 'string') continue;
    const match = TRADE_HOLD.exec(line.value);
    if (!match) continue;
    const [, month, day, year, hour, minute, second] = match;
    const monthIndex = MONTHS[month!];
    if (monthIndex === undefined) continue;
    const at = new Date(Date.UTC(Number(year), monthIndex, Number(day), Number(hour), Number(minute), Number(second)));
    if (Number.isNaN(at.getTime()) || at.getUTCDate() !== Number(day)) continue;
    return at.toISOString();
  }
  return null;
}
