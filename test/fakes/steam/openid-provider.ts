/**
 * Steam's OpenID 2.0 provider (steamcommunity.com/openid/login), enough for the connect flow of
 * docs/design.md §11: checkid_setup redirects the "signed-in user" back with a signed id_res; a direct
 * check_authentication answers is_valid:true once per nonce when the signature verifies (Steam also
 * refuses a replayed nonce). The HMAC secret never leaves the fake.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { type FakeState, retryAfterHeaders, takeFailure } from './state.ts';

export const OPENID_NS = 'http://specs.openid.net/auth/2.0';
export const IDENTIFIER_SELECT = 'http://specs.openid.net/auth/2.0/identifier_select';
/** Steam's claimed ids always carry this prefix, whatever host served the login. */
export const CLAIMED_ID_PREFIX = 'https://steamcommunity.com/openid/id/';
/** Steam signs every assertion with this same handle (it runs no associations). */
const ASSOC_HANDLE = '1234567890';
const SIGNED_FIELDS = ['signed', 'op_endpoint', 'claimed_id', 'identity', 'return_to', 'response_nonce', 'assoc_handle'];

export type OpenIdHelpers = {
  /** The provider endpoint: `${url}/openid/login`. */
  readonly endpoint: string;
  /** Who checkid_setup signs in (null: the login page is shown and nobody is redirected). */
  signInAs(steamId64: string | null): void;
  /**
   * The query parameters of a valid positive assertion (mode id_res) for `returnTo`, as the
   * redirect would carry them. `overrides` (e.g. another op_endpoint or claimed_id) are signed too,
   * so the signature still verifies and only the service's own checks can catch them.
   */
  positiveAssertion(returnTo: string, steamId64?: string, overrides?: Partial<Record<string, string>>): Record<string, string>;
  /** A copy of `params` with fields changed after signing (check_authentication then says false). */
  tamper(params: Record<string, string>, changes: Record<string, string>): Record<string, string>;
  /** true: every check_authentication answers is_valid:false. */
  rejectAll(reject: boolean): void;
};

export function createOpenIdProvider(state: FakeState, baseUrl: () => string, defaultUser: string | null) {
  const secret = randomBytes(32);
  const usedNonces = new Set<string>();
  let signedIn = defaultUser;
  let rejecting = false;
  let nonceCounter = 0;
  const endpoint = () => `${baseUrl()}/openid/login`;

  function signature(params: Record<string, string>, signed: string[]): string {
    const keyValue = signed.map((field) => `${field}:${params[`openid.${field}`] ?? ''}\n`).join('');
    return createHmac('sha1', secret).update(keyValue).digest('base64');
  }

  function nonce(): string {
    nonceCounter += 1;
    const stamp = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    return `${stamp}${randomBytes(6).toString('hex')}${nonceCounter}`;
  }

  function assertion(returnTo: string, steamId64: string, overrides: Partial<Record<string, string>> = {}): Record<string, string> {
    const claimed = `${CLAIMED_ID_PREFIX}${steamId64}`;
    const params: Record<string, string> = {
      'openid.ns': OPENID_NS,
      'openid.mode': 'id_res',
      'openid.op_endpoint': endpoint(),
      'openid.claimed_id': claimed,
      'openid.identity': claimed,
      'openid.return_to': returnTo,
      'openid.response_nonce': nonce(),
      'openid.assoc_handle': ASSOC_HANDLE,
      'openid.signed': SIGNED_FIELDS.join(','),
    };
    for (const [field, value] of Object.entries(overrides)) if (value !== undefined) params[field.startsWith('openid.') ? field : `openid.${field}`] = value;
    params['openid.sig'] = signature(params, params['openid.signed']!.split(','));
    return params;
  }

  function verify(params: Record<string, string>): boolean {
    if (rejecting) return false;
    const signed = (params['openid.signed'] ?? '').split(',');
    // The fields Steam signs must all be covered, or a caller could drop the ones it changed.
    if (!SIGNED_FIELDS.slice(1).every((field) => signed.includes(field))) return false;
    const given = Buffer.from(params['openid.sig'] ?? '', 'base64');
    const expected = Buffer.from(signature(params, signed), 'base64');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
    const responseNonce = params['openid.response_nonce'] ?? '';
    if (usedNonces.has(responseNonce)) return false;
    usedNonces.add(responseNonce);
    return true;
  }

  const helpers: OpenIdHelpers = {
    get endpoint() {
      return endpoint();
    },
    signInAs(steamId64) {
      signedIn = steamId64;
    },
    positiveAssertion(returnTo, steamId64, overrides) {
      const user = steamId64 ?? signedIn;
      if (!user) throw new Error('steam fake: positiveAssertion needs a SteamID64 (nobody is signed in)');
      return assertion(returnTo, user, overrides);
    },
    tamper(params, changes) {
      const copy = { ...params };
      for (const [field, value] of Object.entries(changes)) copy[field.startsWith('openid.') ? field : `openid.${field}`] = value;
      return copy;
    },
    rejectAll(reject) {
      rejecting = reject;
    },
  };

  const keyValue = (lines: Record<string, string>, status = 200) =>
    new Response(
      Object.entries(lines)
        .map(([k, v]) => `${k}:${v}\n`)
        .join(''),
      { status, headers: { 'content-type': 'text/plain;charset=utf-8' } },
    );

  async function handle(request: Request, url: URL): Promise<Response> {
    const failure = takeFailure(state, 'openid');
    if (failure)
      return new Response(`<html><body><h1>Error ${failure.status}</h1></body></html>`, {
        status: failure.status,
        headers: { 'content-type': 'text/html; charset=UTF-8', ...retryAfterHeaders(failure) },
      });
    const params: Record<string, string> = Object.fromEntries(url.searchParams);
    if (request.method === 'POST') {
      const body = new URLSearchParams(await request.text());
      for (const [key, value] of body) params[key] = value;
    }
    const mode = params['openid.mode'];
    if (mode === 'check_authentication') return keyValue({ ns: OPENID_NS, is_valid: verify(params) ? 'true' : 'false' });
    if (mode !== 'checkid_setup') return keyValue({ ns: OPENID_NS, error_code: 'unsupported-mode', error: `Unsupported openid.mode: ${mode ?? ''}` }, 400);

    const returnTo = params['openid.return_to'];
    const realm = params['openid.realm'];
    const badRequest = (reason: string) =>
      new Response(`<html><body><h1>Bad OpenID request</h1><p>${reason}</p></body></html>`, {
        status: 400,
        headers: { 'content-type': 'text/html; charset=UTF-8' },
      });
    if (params['openid.ns'] !== OPENID_NS) return badRequest('openid.ns must be OpenID 2.0');
    if (params['openid.claimed_id'] !== IDENTIFIER_SELECT || params['openid.identity'] !== IDENTIFIER_SELECT)
      return badRequest('claimed_id and identity must be identifier_select');
    if (!returnTo || !URL.canParse(returnTo)) return badRequest('openid.return_to is missing or not a URL');
    // OpenID 2.0 §9.2.1: return_to must fall under the realm.
    if (!realm || !returnTo.startsWith(realm)) return badRequest('openid.return_to does not match openid.realm');
    if (!signedIn)
      return new Response('<html><body><h1>Sign in</h1><p>Nobody is signed in to the Steam fake.</p></body></html>', {
        headers: { 'content-type': 'text/html; charset=UTF-8' },
      });
    const location = new URL(returnTo);
    for (const [key, value] of Object.entries(assertion(returnTo, signedIn))) location.searchParams.append(key, value);
    return new Response(null, { status: 302, headers: { location: location.toString() } });
  }

  return { helpers, handle };
}
