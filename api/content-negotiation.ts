/** HTTP content negotiation shared by routes that send cached bytes (keyless prices, inventory pages). */

export type ContentCoding = 'br' | 'gzip' | 'identity';

/** br when acceptable, then gzip, else identity (q=0 refuses a coding; `*` covers unnamed ones). */
export function negotiateEncoding(acceptEncoding: string | null): ContentCoding {
  if (!acceptEncoding) return 'identity';
  // Clients send the same few Accept-Encoding values: each is parsed once (a bounded few kept).
  let coding = negotiated.get(acceptEncoding);
  if (coding === undefined) {
    coding = negotiate(acceptEncoding);
    if (negotiated.size >= NEGOTIATED_MAX) negotiated.clear();
    negotiated.set(acceptEncoding, coding);
  }
  return coding;
}

const NEGOTIATED_MAX = 1_000;
const negotiated = new Map<string, ContentCoding>();

function negotiate(acceptEncoding: string): ContentCoding {
  const qualities = new Map<string, number>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [coding, ...parameters] = part.split(';').map((piece) => piece.trim());
    if (!coding) continue;
    let quality = 1;
    for (const parameter of parameters) {
      const [name, value] = parameter.split('=').map((piece) => piece.trim());
      if (name === 'q') quality = Number.isFinite(Number(value)) ? Number(value) : 0;
    }
    qualities.set(coding, quality);
  }
  const accepts = (coding: string) => (qualities.get(coding) ?? qualities.get('*') ?? 0) > 0;
  if (accepts('br')) return 'br';
  if (accepts('gzip') || (qualities.get('x-gzip') ?? 0) > 0) return 'gzip';
  return 'identity';
}

/** If-None-Match uses the weak comparison (RFC 9110 13.1.2): `W/` is ignored, `*` matches any. */
export function ifNoneMatchMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
