import { z } from 'zod';

/**
 * The request schemas every route reuses (issue 10: validate once, at the edge). Postgres `text`
 * cannot hold NUL and its timestamps cannot hold every instant a client can spell, so no string or
 * date-time reaches a query before these checks have passed: a bad value is a 400 naming the field.
 */

const NUL = '\u0000';

/** Free text: no NUL, well-formed Unicode (no lone UTF-16 surrogates), within its length bounds. */
export function text(bounds: { min?: number; max: number; trim?: boolean }) {
  let schema = z.string();
  if (bounds.trim) schema = schema.trim();
  if (bounds.min !== undefined) schema = schema.min(bounds.min);
  return schema
    .max(bounds.max)
    .refine((value) => !value.includes(NUL), 'must not contain NUL characters')
    .refine((value) => value.isWellFormed(), 'must be well-formed Unicode (no lone surrogates)');
}

/** Instants Postgres `timestamptz` holds, and that clients plausibly mean (issue 10: years 1970–9999). */
export const DATE_TIME_MIN = new Date('1970-01-01T00:00:00Z');
export const DATE_TIME_MAX = new Date('9999-12-31T23:59:59.999Z');

// RFC 3339 date-time: full date, `T`, time with optional fraction, and `Z` or a numeric offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** Parses an RFC 3339 date-time into a Date within [DATE_TIME_MIN, DATE_TIME_MAX], else null. */
export function parseDateTime(value: string): Date | null {
  const match = RFC3339.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second, , , offsetHour, offsetMinute] = match;
  const fields = [Number(year), Number(month), Number(day), Number(hour), Number(minute), Number(second)] as const;
  const [y, mo, d, h, mi, s] = fields;
  if (mo < 1 || mo > 12 || h > 23 || mi > 59 || s > 59) return null;
  // Day of month checked against the calendar (Date.UTC would roll 02-30 over into March).
  if (d < 1 || d > new Date(Date.UTC(2000, mo, 0)).getUTCDate() || (mo === 2 && d === 29 && !isLeapYear(y))) return null;
  if (offsetHour !== undefined && (Number(offsetHour) > 23 || Number(offsetMinute) > 59)) return null;
  // JavaScript dates keep milliseconds: a longer fraction is cut to three digits before parsing.
  const instant = new Date(value.toUpperCase().replace(/(\.\d{3})\d+/, '$1'));
  if (Number.isNaN(instant.getTime()) || instant < DATE_TIME_MIN || instant > DATE_TIME_MAX) return null;
  return instant;
}

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

const dateTimeMessage = 'must be an RFC 3339 date-time (e.g. 2026-01-31T12:00:00Z) between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z';

/** The one date-time schema: RFC 3339 text in, a Date inside Postgres's comfortable range out. */
export const dateTime = z
  .string()
  .max(40)
  .meta({ format: 'date-time', description: `RFC 3339 date-time, ${DATE_TIME_MIN.toISOString()} to ${DATE_TIME_MAX.toISOString()}` })
  .transform((value, context) => {
    const instant = parseDateTime(value);
    if (instant) return instant;
    context.issues.push({ code: 'custom', message: dateTimeMessage, input: value });
    return z.NEVER;
  });

/** A uuid path or body id; malformed → 400 naming the field, before anything touches Postgres. */
export function uuid(description: string) {
  return z.uuid({ error: 'must be a uuid' }).describe(description);
}

/** `limit` of a list: an integer in its bounds, optional with a documented default. */
export function pageLimit(bounds: { max: number; default: number }) {
  return z.coerce.number().int().min(1).max(bounds.max).default(bounds.default).describe(`Page size, 1 to ${bounds.max} (default ${bounds.default})`);
}

/** The opaque `cursor` of a list (docs/design.md §6); its content is checked by shared/http/cursor.ts. */
export const pageCursor = text({ min: 1, max: 2048 }).optional().describe('The next_cursor of the previous page, passed back unchanged');

/** An instant inside a signed cursor position: kept as text, but only one Postgres can hold. */
export const cursorInstant = z
  .string()
  .max(40)
  .refine((value) => parseDateTime(value) !== null);

/**
 * The body of an action that takes no input (connect, cancel, a webhook's test, rotate-secret and
 * retry): none, or an empty JSON object. Anything else (`[]`, `"str"`, `42`, a populated object) is
 * a 400 rather than silently ignored.
 */
// Elysia hands a route without a body `null`, so null is "no body" too (a JSON `null` included).
export const noBody = z.object({}).strict().nullish().describe('No body, or an empty JSON object');

/**
 * A positive integer path parameter, checked as text (so no value beyond `max` reaches a query)
 * and documented as an integer. `transform` turns the checked text into what the route uses.
 */
export function integerPathParam<T>(max: bigint, description: string, transform: (value: string) => T) {
  const digits = max.toString().length;
  const message = `must be a positive integer of at most ${max}`;
  return z
    .string()
    .refine((value) => new RegExp(`^[1-9][0-9]{0,${digits - 1}}$`).test(value) && BigInt(value) <= max, message)
    .transform(transform)
    .meta({
      type: 'integer',
      format: max > 2_147_483_647n ? 'int64' : 'int32',
      minimum: 1,
      // A JSON number cannot hold a bigint's maximum exactly: int64 says it.
      ...(max <= BigInt(Number.MAX_SAFE_INTEGER) ? { maximum: Number(max) } : {}),
      description,
    });
}
