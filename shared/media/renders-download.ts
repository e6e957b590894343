import { checkSignedUrl, type SignedUrl, type SignedUrlCheck, signUrl } from '../http/signed-url.ts';

/**
 * Signed image URLs of succeeded renders (docs/design.md §10; shared/http/signed-url.ts): each read mints a
 * new one, valid 5 minutes, that works without an API key:
 *
 *   <base>/v2/renders/<render_id>/image?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * The signature covers the purpose `render-image` (distinct from exports'), the render id and the
 * expiry.
 */
export const IMAGE_URL_TTL_SECONDS = 5 * 60;
const PURPOSE = 'render-image';

export function signImageUrl(baseUrl: string, signingKey: string, renderId: string, now: Date): SignedUrl {
  const path = `/v2/renders/${renderId}/image`;
  return signUrl(signingKey, { purpose: PURPOSE, parts: [renderId], baseUrl, path, ttlSeconds: IMAGE_URL_TTL_SECONDS }, now);
}

export function checkImageSignature(
  signingKey: string,
  renderId: string,
  expires: string | undefined,
  signature: string | undefined,
  now: Date,
): SignedUrlCheck {
  return checkSignedUrl(signingKey, { purpose: PURPOSE, parts: [renderId] }, { expires, signature }, now);
}
