import { checkSignedUrl, type SignedUrl, type SignedUrlCheck, signUrl } from '../http/signed-url.ts';

/**
 * Signed download URLs of finished exports (docs/design.md §7; shared/http/signed-url.ts): each read of a
 * completed, unexpired job mints a new one, valid 5 minutes, that works without an API key:
 *
 *   <base>/v2/audit/exports/<export_id>/download?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * The signature covers the purpose `audit-export-download`, the export id and the expiry.
 */
export const DOWNLOAD_URL_TTL_SECONDS = 5 * 60;
const PURPOSE = 'audit-export-download';

export function signDownloadUrl(baseUrl: string, signingKey: string, exportId: string, now: Date): SignedUrl {
  const path = `/v2/audit/exports/${exportId}/download`;
  return signUrl(signingKey, { purpose: PURPOSE, parts: [exportId], baseUrl, path, ttlSeconds: DOWNLOAD_URL_TTL_SECONDS }, now);
}

export function checkDownloadSignature(
  signingKey: string,
  exportId: string,
  expires: string | undefined,
  signature: string | undefined,
  now: Date,
): SignedUrlCheck {
  return checkSignedUrl(signingKey, { purpose: PURPOSE, parts: [exportId] }, { expires, signature }, now);
}
