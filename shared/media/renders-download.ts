import { constantTimeEqual, hmacSha256 } from '../util/crypto.ts';
import type { SignedImage } from './renders-model.ts';

/**
 * Signed image URLs of succeeded renders (DESIGN 10, as audit export downloads in DESIGN 7): each
 * read mints a new one, valid 5 minutes, that works without an API key:
 *
 *   <base>/v2/renders/<render_id>/image?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * The HMAC (SIGNING_KEY) covers a purpose label distinct from exports', the render id and the
 * expiry, so a signature opens one render's image only and any edit makes it a 403.
 */
export const IMAGE_URL_TTL_SECONDS = 5 * 60;

export function imagePath(renderId: string): string {
  return `/v2/renders/${renderId}/image`;
}

function imageSignature(signingKey: string, renderId: string, expires: string): string {
  return hmacSha256(signingKey, `render-image\n${renderId}\n${expires}`).toString('base64url');
}

export function signImageUrl(baseUrl: string, signingKey: string, renderId: string, now: Date): SignedImage {
  const expires = String(Math.floor(now.getTime() / 1000) + IMAGE_URL_TTL_SECONDS);
  const query = new URLSearchParams({ expires, signature: imageSignature(signingKey, renderId, expires) });
  return { url: `${baseUrl.replace(/\/+$/, '')}${imagePath(renderId)}?${query}`, expiresAt: new Date(Number(expires) * 1000) };
}

/** The signature first (so an edited expiry is `invalid`, not `expired`), then the expiry. */
export function checkImageSignature(
  signingKey: string,
  renderId: string,
  expires: string | undefined,
  signature: string | undefined,
  now: Date,
): 'valid' | 'invalid' | 'expired' {
  if (!expires || !signature || !/^\d{1,12}$/.test(expires) || signature.length > 100) return 'invalid';
  const expected = imageSignature(signingKey, renderId, expires);
  if (!constantTimeEqual(Buffer.from(signature), Buffer.from(expected))) return 'invalid';
  return Number(expires) * 1000 > now.getTime() ? 'valid' : 'expired';
}
