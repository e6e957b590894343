import { describe, expect, test } from 'bun:test';
import { checkDownloadSignature, signDownloadUrl } from '../../shared/audit/exports-download.ts';
import { checkSignedUrl, signUrl } from '../../shared/http/signed-url.ts';
import { checkImageSignature, signImageUrl } from '../../shared/media/renders-download.ts';
import { checkEventPageSignature, signEventPageUrl } from '../../shared/webhooks/event-pages.ts';

/** The one signing module (shared/http/signed-url.ts) and the three kinds of URL built on it. */
const KEY = 'test-signing-key-0123456789abcdef';
const NOW = new Date('2024-05-06T07:08:09.500Z');
const RESOURCE = { purpose: 'test-purpose', parts: ['0b6f2a4e-5b7c-4d1e-9f00-1234567890ab', 7] };
const signed = () => new URL(signUrl(KEY, { ...RESOURCE, baseUrl: 'https://api.example.test/', path: '/v2/things/x', ttlSeconds: 300 }, NOW).url);
const queryOf = (url: URL) => ({ expires: url.searchParams.get('expires') ?? undefined, signature: url.searchParams.get('signature') ?? undefined });

describe('signUrl and checkSignedUrl', () => {
  test('a URL under the base, valid for its lifetime in whole seconds', () => {
    const url = signed();
    expect(`${url.origin}${url.pathname}`).toBe('https://api.example.test/v2/things/x');
    expect(url.searchParams.get('expires')).toBe(String(Math.floor(NOW.getTime() / 1000) + 300));
    const result = signUrl(KEY, { ...RESOURCE, baseUrl: 'https://api.example.test', path: '/p', ttlSeconds: 300 }, NOW);
    expect(result.expiresAt.toISOString()).toBe('2024-05-06T07:13:09.000Z');
    expect(checkSignedUrl(KEY, RESOURCE, queryOf(url), NOW)).toBe('valid');
  });

  test('an edited expiry is invalid, not expired', () => {
    const query = queryOf(signed());
    expect(checkSignedUrl(KEY, RESOURCE, { ...query, expires: String(Number(query.expires) + 3600) }, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { ...query, expires: String(Number(query.expires) - 3600) }, NOW)).toBe('invalid');
  });

  test('past its expiry a genuine URL is expired', () => {
    const query = queryOf(signed());
    const expiry = new Date(Number(query.expires) * 1000);
    expect(checkSignedUrl(KEY, RESOURCE, query, new Date(expiry.getTime() - 1))).toBe('valid');
    expect(checkSignedUrl(KEY, RESOURCE, query, expiry)).toBe('expired');
  });

  test('a signature of another purpose, other parts or another key is invalid', () => {
    const query = queryOf(signed());
    expect(checkSignedUrl(KEY, { ...RESOURCE, purpose: 'other-purpose' }, query, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, { ...RESOURCE, parts: [RESOURCE.parts[0]!, 8] }, query, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, { ...RESOURCE, parts: [RESOURCE.parts[0]!] }, query, NOW)).toBe('invalid');
    expect(checkSignedUrl(`${KEY}x`, RESOURCE, query, NOW)).toBe('invalid');
  });

  test('missing, malformed or re-spelled values are invalid', () => {
    const query = queryOf(signed());
    expect(checkSignedUrl(KEY, RESOURCE, {}, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { expires: query.expires }, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { signature: query.signature }, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { ...query, expires: `${query.expires}.0` }, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { ...query, signature: `${query.signature}=` }, NOW)).toBe('invalid');
    expect(checkSignedUrl(KEY, RESOURCE, { ...query, signature: 'A'.repeat(101) }, NOW)).toBe('invalid');
  });
});

describe('the three kinds of signed URL', () => {
  // Minted by the three separate implementations this module replaced: URLs already handed out keep verifying.
  const EXPORT_ID = '0b6f2a4e-5b7c-4d1e-9f00-1234567890ab';
  const RENDER_ID = '7c9e6679-7425-40de-944b-e07fc1f90ae7';
  const EVENT_ID = '16fd2706-8baf-433b-82eb-8c7fada847da';
  const EXPORT_URL = `https://api.example.test/v2/audit/exports/${EXPORT_ID}/download?expires=1714979589&signature=4O-1H4tO58CGsRCI6rHAjkV3KOtH4JhpII9zL6dPunI`;
  const IMAGE_URL = `https://api.example.test/v2/renders/${RENDER_ID}/image?expires=1714979589&signature=PvHVw-vZ3ghahRN7YUiq6rpBKeaDz9c1i1CU8zK9YOE`;
  const PAGE_URL = `https://api.example.test/v2/webhooks/events/${EVENT_ID}/pages/3?expires=1715065689&signature=3POitogiRk9Y4Tvsv_TW1H1ALq4SODWDyY0YI9HHGX4`;

  test('are minted byte for byte as before: same paths, purposes and lifetimes (5 minutes, 5 minutes, 24 hours)', () => {
    expect(signDownloadUrl('https://api.example.test/', KEY, EXPORT_ID, NOW).url).toBe(EXPORT_URL);
    expect(signImageUrl('https://api.example.test', KEY, RENDER_ID, NOW).url).toBe(IMAGE_URL);
    expect(signEventPageUrl({ signingKey: KEY, baseUrl: 'https://api.example.test' }, EVENT_ID, 3, NOW)).toBe(PAGE_URL);
  });

  test('each verifies as its own kind only', () => {
    const exportQuery = queryOf(new URL(EXPORT_URL));
    const imageQuery = queryOf(new URL(IMAGE_URL));
    const pageQuery = queryOf(new URL(PAGE_URL));
    expect(checkDownloadSignature(KEY, EXPORT_ID, exportQuery.expires, exportQuery.signature, NOW)).toBe('valid');
    expect(checkImageSignature(KEY, RENDER_ID, imageQuery.expires, imageQuery.signature, NOW)).toBe('valid');
    expect(checkEventPageSignature(KEY, EVENT_ID, 3, pageQuery.expires, pageQuery.signature, NOW)).toBe('valid');
    // The same id under another kind's purpose label: refused.
    expect(checkImageSignature(KEY, EXPORT_ID, exportQuery.expires, exportQuery.signature, NOW)).toBe('invalid');
    expect(checkDownloadSignature(KEY, RENDER_ID, imageQuery.expires, imageQuery.signature, NOW)).toBe('invalid');
    expect(checkEventPageSignature(KEY, EVENT_ID, 4, pageQuery.expires, pageQuery.signature, NOW)).toBe('invalid');
    expect(checkDownloadSignature(KEY, EXPORT_ID, exportQuery.expires, exportQuery.signature, new Date(1714979589 * 1000))).toBe('expired');
  });
});
