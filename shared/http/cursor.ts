import type { z } from 'zod';
import { canonicalJson } from '../util/canonical-json.ts';
import { constantTimeEqual, hmacSha256, sha256Hex } from '../util/crypto.ts';
import { errors } from './errors.ts';

/**
 * Opaque keyset cursors (docs/design.md §6): `base64url(payload).base64url(hmac)`. The payload carries the
 * position and a digest of the filters that produced it, so a cursor replayed with other filters,
 * from another list, or edited by hand is a 400 invalid_cursor.
 */
type CursorEnvelope<Position> = { l: string; f: string; p: Position };

export function filterDigest(list: string, filters: Record<string, unknown>): string {
  return sha256Hex(`${list}\n${canonicalJson(filters)}`).slice(0, 32);
}

export function encodeCursor<Position>(signingKey: string, list: string, filters: Record<string, unknown>, position: Position): string {
  const envelope: CursorEnvelope<Position> = { l: list, f: filterDigest(list, filters), p: position };
  const payload = Buffer.from(JSON.stringify(envelope)).toString('base64url');
  const signature = hmacSha256(signingKey, `cursor.${payload}`).toString('base64url');
  return `${payload}.${signature}`;
}

/**
 * Returns the position, or throws 400 invalid_cursor. `position` is the zod schema of the payload:
 * a signed cursor is still parsed, so a position can never carry a value its query cannot hold.
 */
export function decodeCursor<Position>(
  signingKey: string,
  list: string,
  filters: Record<string, unknown>,
  cursor: string,
  position: z.ZodType<Position>,
): Position {
  const [payload, signature, extra] = cursor.split('.');
  if (!payload || !signature || extra !== undefined || cursor.length > 2048) throw errors.invalidCursor();
  // Compare the encoded text, not decoded bytes: base64url decoding ignores trailing bits, so two
  // spellings of one signature would otherwise both pass.
  const expected = hmacSha256(signingKey, `cursor.${payload}`).toString('base64url');
  if (!constantTimeEqual(Buffer.from(signature), Buffer.from(expected))) throw errors.invalidCursor();
  let envelope: unknown;
  try {
    envelope = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw errors.invalidCursor();
  }
  if (typeof envelope !== 'object' || envelope === null) throw errors.invalidCursor();
  const { l, f, p } = envelope as Partial<CursorEnvelope<unknown>>;
  if (l !== list || f !== filterDigest(list, filters)) throw errors.invalidCursor();
  const parsed = position.safeParse(p);
  if (!parsed.success) throw errors.invalidCursor();
  return parsed.data;
}
