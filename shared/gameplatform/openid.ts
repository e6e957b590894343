import { parseSteamId } from './steam-id.ts';

/**
 * Steam OpenID 2.0 as a relying party (docs/design.md §11; OpenID Authentication 2.0, sections 9–11):
 * building the checkid_setup redirect, checking a positive assertion, and asking the provider to
 * verify its signature (`check_authentication`, the stateless mode Steam supports). Nothing here
 * touches the database; shared/gameplatform/accounts-service.ts adds the state and nonce checks.
 */

export const OPENID_NS = 'http://specs.openid.net/auth/2.0';
const IDENTIFIER_SELECT = 'http://specs.openid.net/auth/2.0/identifier_select';
/** Steam's claimed ids always carry this prefix, wherever the provider is reached (docs/design.md §11). */
export const STEAM_CLAIMED_ID_PREFIX = 'https://steamcommunity.com/openid/id/';
export const CALLBACK_PATH = '/v2/gameplatform/openid/callback';
/** Fields the provider must have signed, or a forger could swap them (spec 11.2 lists the first five for 2.0). */
export const REQUIRED_SIGNED_FIELDS = ['op_endpoint', 'claimed_id', 'identity', 'return_to', 'response_nonce', 'assoc_handle'] as const;
/** How old a response_nonce may be: the provider stamped it when the user signed in, moments ago. */
export const NONCE_MAX_AGE_MS = 5 * 60_000;
/** Clock skew tolerated for a nonce stamped in our future. */
const NONCE_MAX_SKEW_MS = 60_000;
/** The provider answers check_authentication within this, or the callback is a 503. */
export const CHECK_AUTHENTICATION_TIMEOUT_MS = 5_000;
const MAX_FIELD_LENGTH = 2_048;
const MAX_FIELDS = 40;

/** The provider endpoint: `${STEAM_COMMUNITY_URL}/openid/login`, also what op_endpoint must say exactly. */
export function loginUrl(steamCommunityUrl: string): string {
  return `${steamCommunityUrl.replace(/\/+$/, '')}/openid/login`;
}

/** Where the provider sends the user back; the state rides in its query so the callback finds its flow. */
export function returnToUrl(baseUrl: string, state: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${CALLBACK_PATH}?state=${encodeURIComponent(state)}`;
}

/** The realm is the base URL: the provider shows it to the user as who is asking. */
export function realmOf(baseUrl: string): string {
  return baseUrl.replace(/\/+$/, '');
}

/** The checkid_setup redirect (spec 9.1) with identifier_select: the user picks the Steam account. */
export function checkidSetupUrl(steamCommunityUrl: string, baseUrl: string, state: string): string {
  const query = new URLSearchParams({
    'openid.ns': OPENID_NS,
    'openid.mode': 'checkid_setup',
    'openid.return_to': returnToUrl(baseUrl, state),
    'openid.realm': realmOf(baseUrl),
    'openid.identity': IDENTIFIER_SELECT,
    'openid.claimed_id': IDENTIFIER_SELECT,
  });
  return `${loginUrl(steamCommunityUrl)}?${query}`;
}

/** Why an assertion was refused; recorded in the rejected audit event, never shown beyond the code. */
export type OpenIdRejection =
  | 'malformed_response'
  | 'wrong_mode'
  | 'wrong_namespace'
  | 'wrong_op_endpoint'
  | 'wrong_return_to'
  | 'unknown_or_used_state'
  | 'expired_state'
  | 'malformed_claimed_id'
  | 'identity_mismatch'
  | 'unsigned_fields'
  | 'stale_nonce'
  | 'replayed_nonce'
  | 'signature_not_confirmed';

export class OpenIdRejectedError extends Error {
  constructor(readonly reason: OpenIdRejection) {
    super(`OpenID assertion refused: ${reason}`);
  }
}

/** The provider could not be asked (timeout, connection failure, 429 or 5xx): the callback is a 503. */
export class OpenIdProviderUnavailableError extends Error {}

/** A positive assertion that passed every check that needs neither the database nor the provider. */
export type CheckedAssertion = {
  state: string;
  steamId: string;
  nonce: string;
  /** Every openid.* field as received, for check_authentication. */
  fields: Record<string, string>;
};

/**
 * The openid.* fields and the state of a callback's query, each once. A repeated or oversized
 * field is a malformed response, so nothing ambiguous reaches the provider or the database.
 */
export function callbackFields(query: URLSearchParams): { state: string | null; fields: Record<string, string> } {
  const fields: Record<string, string> = {};
  let state: string | null = null;
  let count = 0;
  for (const [name, value] of query) {
    count += 1;
    if (count > MAX_FIELDS || value.length > MAX_FIELD_LENGTH || value.includes('\u0000') || !value.isWellFormed())
      throw new OpenIdRejectedError('malformed_response');
    if (name === 'state') {
      if (state !== null) throw new OpenIdRejectedError('malformed_response');
      state = value;
    } else if (name.startsWith('openid.')) {
      if (Object.hasOwn(fields, name)) throw new OpenIdRejectedError('malformed_response');
      fields[name] = value;
    }
  }
  return { state, fields };
}

/** The instant a response_nonce was stamped (spec 10.1: `2005-05-15T17:11:51Z` then unique characters), or null. */
export function nonceTime(nonce: string): Date | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})Z/.exec(nonce);
  if (!match) return null;
  const at = new Date(`${match[1]}-${match[2]}-${match[3]}T${match[4]}:${match[5]}:${match[6]}Z`);
  return Number.isNaN(at.getTime()) ? null : at;
}

/**
 * The checks of a positive assertion that need no database and no network (spec 11.1–11.2, docs/design.md
 * §11), in the order a forger is most cheaply turned away: mode and namespace, the op endpoint, the
 * exact return_to with the state the callback was reached with, the claimed id form, the signed
 * field list, and a recent nonce. Throws OpenIdRejectedError naming the first failure.
 */
export function checkAssertion(
  state: string | null,
  fields: Record<string, string>,
  expected: { opEndpoint: string; baseUrl: string; now: Date },
): CheckedAssertion {
  if (state === null || state.length === 0) throw new OpenIdRejectedError('unknown_or_used_state');
  if (fields['openid.mode'] !== 'id_res') throw new OpenIdRejectedError('wrong_mode');
  if (fields['openid.ns'] !== OPENID_NS) throw new OpenIdRejectedError('wrong_namespace');
  if (fields['openid.op_endpoint'] !== expected.opEndpoint) throw new OpenIdRejectedError('wrong_op_endpoint');
  // spec 11.1: return_to must be the URL this callback answers at, state included, byte for byte.
  if (fields['openid.return_to'] !== returnToUrl(expected.baseUrl, state)) throw new OpenIdRejectedError('wrong_return_to');
  const claimedId = fields['openid.claimed_id'] ?? '';
  if (!claimedId.startsWith(STEAM_CLAIMED_ID_PREFIX)) throw new OpenIdRejectedError('malformed_claimed_id');
  const steamIdText = claimedId.slice(STEAM_CLAIMED_ID_PREFIX.length);
  const ids = /^[0-9]{17}$/.test(steamIdText) ? parseSteamId(steamIdText) : null;
  if (!ids || ids.steam_id !== steamIdText) throw new OpenIdRejectedError('malformed_claimed_id');
  if (fields['openid.identity'] !== claimedId) throw new OpenIdRejectedError('identity_mismatch');
  const signed = new Set((fields['openid.signed'] ?? '').split(','));
  // A field named as signed but absent would let the provider vouch for a value we never saw.
  if (REQUIRED_SIGNED_FIELDS.some((field) => !signed.has(field)) || [...signed].some((field) => fields[`openid.${field}`] === undefined)) {
    throw new OpenIdRejectedError('unsigned_fields');
  }
  if (!fields['openid.sig'] || !fields['openid.assoc_handle']) throw new OpenIdRejectedError('unsigned_fields');
  const nonce = fields['openid.response_nonce']!;
  const stampedAt = nonceTime(nonce);
  const age = stampedAt ? expected.now.getTime() - stampedAt.getTime() : Number.NaN;
  if (!(age <= NONCE_MAX_AGE_MS && age >= -NONCE_MAX_SKEW_MS) || nonce.length > 255) throw new OpenIdRejectedError('stale_nonce');
  return { state, steamId: ids.steam_id, nonce, fields };
}

/** Key-Value Form Encoding (spec 4.1.1): `key:value` lines. */
export function parseKeyValueForm(text: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const line of text.split('\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) pairs.set(line.slice(0, colon), line.slice(colon + 1).replace(/\r$/, ''));
  }
  return pairs;
}

/**
 * Asks the provider whether it made this assertion (spec 11.4.2.1): the same fields, form-encoded,
 * with mode check_authentication, POSTed to the op endpoint. True only for `is_valid:true`. A
 * provider that cannot answer (timeout, refused connection, 429, 5xx) throws
 * OpenIdProviderUnavailableError; any other answer counts as not confirmed.
 */
export async function confirmWithProvider(opEndpoint: string, fields: Record<string, string>, fetchImpl: typeof fetch = fetch): Promise<boolean> {
  const body = new URLSearchParams({ ...fields, 'openid.mode': 'check_authentication' });
  let response: Response;
  let text: string;
  try {
    response = await fetchImpl(opEndpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/plain' },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(CHECK_AUTHENTICATION_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    throw new OpenIdProviderUnavailableError(`check_authentication failed: ${(error as Error).message}`);
  }
  if (response.status === 429 || response.status >= 500) throw new OpenIdProviderUnavailableError(`check_authentication answered ${response.status}`);
  if (response.status !== 200) return false;
  const answer = parseKeyValueForm(text.slice(0, 4_096));
  // Steam names the namespace in its answer; one naming another protocol version is not a yes.
  return (!answer.has('ns') || answer.get('ns') === OPENID_NS) && answer.get('is_valid') === 'true';
}
