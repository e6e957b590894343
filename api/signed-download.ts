import { z } from 'zod';
import { errors } from '../shared/http/errors.ts';
import type { SignedUrlCheck } from '../shared/http/signed-url.ts';
import { text } from '../shared/http/validation.ts';
import { blobPath, blobSize } from '../shared/platform/blob-store.ts';

/**
 * The routes that serve a stored file behind a signed URL (audit export downloads, render images;
 * shared/http/signed-url.ts): the URL is the only credential. The signature is checked first, before
 * any lookup, so unsigned traffic costs one HMAC; then the row, whether its file may be served now, and
 * the file itself (404 when any is missing); then the file as stored, streamed with its headers.
 */

// Unknown parameters are tolerated: the URL is handed to browsers and download tools as is.
export const signedUrlQuery = z.object({ expires: text({ max: 20 }).optional(), signature: text({ max: 200 }).optional() });
export type SignedUrlQuery = z.output<typeof signedUrlQuery>;

/** A row's file as it is served. */
export type SignedFile = {
  blobKey: string;
  /** The file's SHA-256, sent (quoted) as its ETag. */
  sha256: string | null;
  contentType: string;
  contentDisposition?: string;
  cacheControl: string;
};

export type SignedDownload<Row> = {
  blobDir: string;
  /** For the 403 messages: "The <url> URL is not valid; fetch the <resource> again for a new one." */
  url: string;
  resource: string;
  /** The 404 message: no row, nothing to serve now, or the file is gone. */
  gone: string;
  check: (id: string, query: SignedUrlQuery) => SignedUrlCheck;
  find: (id: string) => Promise<Row | null>;
  /** The row's file when it may be served now, else null (404). */
  file: (row: Row) => SignedFile | null;
};

/** The handler of one signed-download route, given the id its path names and its query. */
export function signedDownload<Row>(spec: SignedDownload<Row>): (id: string, query: SignedUrlQuery) => Promise<Response> {
  return async (id, query) => {
    const check = spec.check(id, query);
    if (check === 'invalid')
      throw errors.forbidden('invalid_download_url', `The ${spec.url} URL is not valid; fetch the ${spec.resource} again for a new one.`);
    if (check === 'expired') throw errors.forbidden('download_url_expired', `The ${spec.url} URL has expired; fetch the ${spec.resource} again for a new one.`);
    const row = await spec.find(id);
    const file = row ? spec.file(row) : null;
    const size = file ? await blobSize(spec.blobDir, file.blobKey) : null;
    if (!file || size === null) throw errors.notFound(spec.gone);
    return new Response(Bun.file(blobPath(spec.blobDir, file.blobKey)), {
      headers: {
        'content-type': file.contentType,
        'content-length': String(size),
        ...(file.contentDisposition === undefined ? {} : { 'content-disposition': file.contentDisposition }),
        'cache-control': file.cacheControl,
        etag: `"${file.sha256}"`,
        'x-content-type-options': 'nosniff',
      },
    });
  };
}
