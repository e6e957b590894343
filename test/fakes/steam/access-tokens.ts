/**
 * Owner access tokens as the Steam fake issues and checks them (docs/design.md §17). Steam's `webapi_token`
 * is a JWT signed by Steam: `{iss: "steam", sub: <SteamID64>, aud: ["web", …], exp, nbf, iat, jti,
 * oat, per, ip_subject, ip_confirmer}`; the IEconService reads that take `access_token=` answer 401
 * with an HTML page for a token Steam did not sign, one that has expired or been revoked, and for a
 * 403 for a good token used to read another account than its `sub`.
 *
 * The fake signs its tokens with HMAC-SHA256 under a per-fake secret, so a token made anywhere
 * else (a test's hand-made JWT with the right `sub`) is refused here as Steam would refuse it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FakeState } from './state.ts';

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** Steam's 401 body on its Web API (HTML, whatever the endpoint's format). */
const UNAUTHORIZED_HTML =
  '<html><head><title>401 Unauthorized</title></head><body><h1>Unauthorized</h1>Access is denied. Retrying will not help. Please verify your <pre>access_token=</pre> parameter.</body></html>';

export const unauthorized = () => new Response(UNAUTHORIZED_HTML, { status: 401, headers: { 'content-type': 'text/html; charset=UTF-8' } });
/** Steam's 403 for a good token used on another account's data. */
export const forbidden = () =>
  new Response('<html><head><title>Forbidden</title></head><body><h1>Forbidden</h1>Access is denied.</body></html>', {
    status: 403,
    headers: { 'content-type': 'text/html; charset=UTF-8' },
  });

export type AccessTokenState = {
  secret: Buffer;
  /** jti of tokens revoked before they expired (the owner signed out everywhere, or Steam refused it). */
  revoked: Set<string>;
};

export const newAccessTokenState = (): AccessTokenState => ({ secret: randomBytes(32), revoked: new Set() });

/** A token for `steamId64` as Steam issues it, valid until `expiresAt` (default 24 h from now). */
export function issueAccessToken(state: FakeState, steamId64: string, expiresAt = new Date(Date.now() + 24 * 3_600_000)): string {
  const now = Math.floor(Date.now() / 1000);
  const header = base64url({ typ: 'JWT', alg: 'EdDSA' });
  const payload = base64url({
    iss: 'steam',
    sub: steamId64,
    aud: ['web', 'renew', 'derive'],
    exp: Math.floor(expiresAt.getTime() / 1000),
    nbf: now - 60,
    iat: now,
    jti: `${randomBytes(4).toString('hex').toUpperCase()}_${randomBytes(4).toString('hex').toUpperCase()}`,
    oat: now,
    per: 1,
    ip_subject: '127.0.0.1',
    ip_confirmer: '127.0.0.1',
  });
  const signature = createHmac('sha256', state.accessTokens.secret).update(`${header}.${payload}`).digest('base64url');
  return `${header}.${payload}.${signature}`;
}

/** The token's `jti` (for revokeAccessToken), or null when it is not one of ours. */
function claimsOf(state: FakeState, token: string): { sub: string; exp: number; jti: string } | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = createHmac('sha256', state.accessTokens.secret).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown; exp?: unknown; jti?: unknown };
    if (typeof claims.sub !== 'string' || typeof claims.exp !== 'number' || typeof claims.jti !== 'string') return null;
    return { sub: claims.sub, exp: claims.exp, jti: claims.jti };
  } catch {
    return null;
  }
}

/** Steam stops honouring a token before its `exp` (the owner revoked it): later reads with it get 401. */
export function revokeAccessToken(state: FakeState, token: string): void {
  const claims = claimsOf(state, token);
  if (claims) state.accessTokens.revoked.add(claims.jti);
}

/**
 * The SteamID64 the request's `access_token` speaks for, or Steam's refusal: 401 when missing, not
 * signed by us, expired or revoked; 403 when `steamId` is given and the token is another account's.
 */
export function checkAccessToken(state: FakeState, url: URL, steamId?: string | null): { steamId: string } | Response {
  const token = url.searchParams.get('access_token');
  if (!token) return unauthorized();
  const claims = claimsOf(state, token);
  if (!claims || claims.exp * 1000 <= Date.now() || state.accessTokens.revoked.has(claims.jti)) return unauthorized();
  if (steamId !== undefined && steamId !== null && steamId !== claims.sub) return forbidden();
  return { steamId: claims.sub };
}
