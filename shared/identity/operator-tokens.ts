import { createHash } from 'node:crypto';
import { constantTimeEqual } from '../util/crypto.ts';

// Far above any token we issue; a longer header is refused before it is decoded.
const MAX_AUTHORIZATION_LENGTH = 1_024;

/**
 * The credential in an `Authorization` header: the token of `Bearer <token>`, or the password of
 * `Basic base64(user:password)` (the user is ignored), which is what a browser sends after its
 * sign-in prompt. Anything else, malformed or oversized, is no credential.
 */
export function credentialOf(authorization: string | null): string | null {
  if (!authorization || authorization.length > MAX_AUTHORIZATION_LENGTH) return null;
  const space = authorization.indexOf(' ');
  if (space < 0) return null;
  const scheme = authorization.slice(0, space).toLowerCase();
  const value = authorization.slice(space + 1).trim();
  if (scheme === 'bearer') return value || null;
  if (scheme !== 'basic') return null;
  // Invalid base64 decodes to bytes that simply do not match; it never throws.
  const decoded = Buffer.from(value, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon >= 0 ? decoded.slice(colon + 1) || null : null;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * A check of credentials against one configured token (METRICS_TOKEN, OPERATOR_TOKEN), in
 * constant time: both sides are compared as SHA-256 digests, so neither the position of the first
 * differing byte nor the token's length shows in the timing. No token configured: nothing matches.
 */
export function tokenCheck(token: string | undefined): (credential: string | null) => boolean {
  if (!token) return () => false;
  const expected = digest(token);
  return (credential) => credential !== null && constantTimeEqual(digest(credential), expected);
}
