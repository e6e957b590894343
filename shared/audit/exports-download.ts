import { constantTimeEqual, hmacSha256 } from '../util/crypto.ts';
import type { SignedDownload } from './exports-model.ts';

/**
 * Signed download URLs of finished exports (DESIGN 7): each read of a completed, unexpired job
 * mints a new one, valid 5 minutes, that works without an API key:
 *
 *   <base>/v2/audit/exports/<export_id>/download?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * The HMAC (SIGNING_KEY) covers a purpose label, the export id and the expiry, so a signature is
 * good for one export only, and editing any part of the URL makes it a 403.
 */
export const DOWNLOAD_URL_TTL_SECONDS = 5 * 60;

export function downloadPath(exportId: string): string {
  return `/v2/audit/exports/${exportId}/download`;
}

function downloadSignature(signingKey: string, exportId: string, expires: string): string {
  return hmacSha256(signingKey, `audit-export-download\n${exportId}\n${expires}`).toString('base64url');
}

export function signDownloadUrl(baseUrl: string, signingKey: string, exportId: string, now: Date): SignedDownload {
  const expires = String(Math.floor(now.getTime() / 1000) + DOWNLOAD_URL_TTL_SECONDS);
  const query = new URLSearchParams({ expires, signature: downloadSignature(signingKey, exportId, expires) });
  return { url: `${baseUrl.replace(/\/+$/, '')}${downloadPath(exportId)}?${query}`, expiresAt: new Date(Number(expires) * 1000) };
}

export type DownloadCheck = 'valid' | 'invalid' | 'expired';

/** The signature first (so an edited expiry is `invalid`, not `expired`), then the expiry. */
export function checkDownloadSignature(
  signingKey: string,
  exportId: string,
  expires: string | undefined,
  signature: string | undefined,
  now: Date,
): DownloadCheck {
  if (!expires || !signature || !/^\d{1,12}$/.test(expires) || signature.length > 100) return 'invalid';
  // Compare the encoded text: base64url decoding ignores trailing bits, so two spellings would pass.
  const expected = downloadSignature(signingKey, exportId, expires);
  if (!constantTimeEqual(Buffer.from(signature), Buffer.from(expected))) return 'invalid';
  return Number(expires) * 1000 > now.getTime() ? 'valid' : 'expired';
}
