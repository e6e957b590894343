import { constantTimeEqual, hmacSha256 } from '../util/crypto.ts';

/**
 * Signed URLs that work without an API key (audit export downloads, render images, webhook event
 * pages; docs/design.md §7, §8 and §10):
 *
 *   <base><path>?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * The HMAC (SIGNING_KEY) covers "<purpose>\n<part>\n…\n<expires>": a purpose label per kind of URL,
 * the ids the path names (an export id; an event id and a page), and the expiry. A signature is
 * therefore good for one resource of one kind only, and editing any part of the URL invalidates it.
 * Each domain keeps its path, purpose and lifetime next to its model; this module is the one
 * implementation of signing and checking.
 */
export type SignedUrl = { url: string; expiresAt: Date };
export type SignedUrlCheck = 'valid' | 'invalid' | 'expired';

/** One signed resource: its purpose label and the parts that name it, in the order they are signed. */
export type SignedResource = { purpose: string; parts: readonly (string | number)[] };

function signature(signingKey: string, resource: SignedResource, expires: string): string {
  return hmacSha256(signingKey, [resource.purpose, ...resource.parts, expires].join('\n')).toString('base64url');
}

/** A new URL for `path` under `baseUrl`, valid `ttlSeconds` from `now` (whole seconds). */
export function signUrl(signingKey: string, resource: SignedResource & { baseUrl: string; path: string; ttlSeconds: number }, now: Date): SignedUrl {
  const expires = String(Math.floor(now.getTime() / 1000) + resource.ttlSeconds);
  const query = new URLSearchParams({ expires, signature: signature(signingKey, resource, expires) });
  return { url: `${resource.baseUrl.replace(/\/+$/, '')}${resource.path}?${query}`, expiresAt: new Date(Number(expires) * 1000) };
}

/**
 * Checks a URL's `expires` and `signature` query values against the resource it names: the
 * signature first (so an edited expiry is `invalid`, not `expired`), then the expiry.
 */
export function checkSignedUrl(
  signingKey: string,
  resource: SignedResource,
  query: { expires?: string | undefined; signature?: string | undefined },
  now: Date,
): SignedUrlCheck {
  const { expires, signature: given } = query;
  if (!expires || !given || !/^\d{1,12}$/.test(expires) || given.length > 100) return 'invalid';
  // Compare the encoded text: base64url decoding ignores trailing bits, so two spellings would pass.
  if (!constantTimeEqual(Buffer.from(given), Buffer.from(signature(signingKey, resource, expires)))) return 'invalid';
  return Number(expires) * 1000 > now.getTime() ? 'valid' : 'expired';
}
