import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * SSRF guard for webhook targets (docs/design.md §8). A URL is refused when its host, or any address its
 * name resolves to, is anything but public unicast: loopback, private, link-local, carrier-grade
 * NAT, multicast, unspecified, broadcast, benchmarking, documentation and other reserved ranges,
 * and the cloud metadata services. IPv6 forms that carry an IPv4 address (v4-mapped, v4-translated,
 * NAT64 64:ff9b::/96, 6to4) are judged by that IPv4 address. Deliveries then dial the address that
 * was checked, so a DNS answer that changes between check and connect cannot redirect them.
 */

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
}

/** Metadata services named for a clear message (most also fall in a refused range anyway). */
const METADATA_ADDRESSES = new Map<string, string>([
  ['169.254.169.254', 'cloud metadata service'],
  ['169.254.170.2', 'cloud metadata service (ECS task credentials)'],
  ['169.254.169.253', 'cloud DNS resolver'],
  ['100.100.100.200', 'cloud metadata service (Alibaba)'],
  ['192.0.0.192', 'cloud metadata service (Oracle)'],
  // Azure's WireServer sits in public address space but only answers from inside Azure.
  ['168.63.129.16', 'cloud platform service (Azure WireServer)'],
  ['fd00:ec2::254', 'cloud metadata service (AWS IPv6)'],
]);

const RANGE_REASONS: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'a broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  deprecatedSiteLocal: 'a site-local address',
  benchmarking: 'a benchmarking address',
  rfc6052: 'a local-use NAT64 address',
};

function fromBytes(bytes: number[]): ipaddr.IPv4 {
  return new ipaddr.IPv4(bytes);
}

/** The IPv4 address an IPv6 address stands for, when it is one of the forms that embed one. */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = address.toByteArray();
  const range = address.range();
  if (range === 'ipv4Mapped' || range === 'rfc6145') return fromBytes(bytes.slice(12));
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052); the local-use 64:ff9b:1::/48 is refused whole.
  if (address.match(ipaddr.IPv6.parse('64:ff9b::'), 96)) return fromBytes(bytes.slice(12));
  if (range === '6to4') return fromBytes(bytes.slice(2, 6));
  return null;
}

/** Why `address` (an IP literal) must not be dialled, or null when it is public unicast. */
export function refusalReason(address: string): string | null {
  const literal = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(literal) === 0) return 'not an IP address';
  const parsed: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(literal);
  const metadata = METADATA_ADDRESSES.get(parsed.toString()) ?? METADATA_ADDRESSES.get(parsed.toNormalizedString());
  if (metadata) return `a ${metadata} address`;
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // ::/96 other than :: and ::1 is the deprecated IPv4-compatible form; nothing public lives there.
    if (v6.match(ipaddr.IPv6.parse('::'), 96) && !['unspecified', 'loopback'].includes(v6.range())) return 'a reserved address';
    const v4 = embeddedIpv4(v6);
    if (v4) {
      const inner = refusalReason(v4.toString());
      return inner ? `${inner} (${v4.toString()} in IPv6 form)` : null;
    }
  }
  const range = parsed.range();
  if (range === 'unicast') return null;
  return RANGE_REASONS[range] ?? 'a reserved address';
}

export type ResolvedAddress = { address: string; family: 4 | 6 };
export type Lookup = (hostname: string) => Promise<ResolvedAddress[]>;

/** Every address the system resolver gives for a name (IP literals resolve to themselves). */
export const systemLookup: Lookup = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => ({ address: answer.address, family: answer.family === 6 ? 6 : 4 }));
};

export type TargetPolicy = { allowPrivate: boolean; lookup?: Lookup /** Bound on name resolution (5 s). */; resolveTimeoutMs?: number };

export const RESOLVE_TIMEOUT_MS = 5_000;

/** The resolver's answer, or a rejection with code ETIMEOUT once `ms` have passed: a hung resolver must not hold a request or a lease. */
function lookupWithin(lookup: Lookup, host: string, ms: number): Promise<ResolvedAddress[]> {
  let timer: Timer | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('name resolution timed out'), { code: 'ETIMEOUT' })), ms);
  });
  return Promise.race([lookup(host), timeout]).finally(() => clearTimeout(timer));
}

/** The URL's host without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Checks the form of a webhook URL: absolute, https (http only with the private-target allowance),
 * no credentials, a host. Returns it normalised by the WHATWG parser, which also turns odd IPv4
 * spellings (`2130706433`, `0x7f.1`) into dotted quads before any address check.
 */
export function parseWebhookUrl(raw: string, policy: Pick<TargetPolicy, 'allowPrivate'>): URL {
  if (raw.length > MAX_WEBHOOK_URL_LENGTH) throw new TargetRefusedError(`url is longer than ${MAX_WEBHOOK_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefusedError('url is not an absolute URL');
  }
  const schemes = policy.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) throw new TargetRefusedError('url must use https');
  if (url.username || url.password) throw new TargetRefusedError('url must not carry credentials');
  if (!url.hostname) throw new TargetRefusedError('url has no host');
  url.hash = '';
  return url;
}

/**
 * Resolves the URL's host and checks every address (one bad answer refuses the whole name, since
 * a client could be given any of them). Returns the address to dial. With the private-target
 * allowance (development and tests only) every address is accepted.
 */
export async function resolveTarget(url: URL, policy: TargetPolicy): Promise<ResolvedAddress> {
  const host = hostOf(url);
  let answers: ResolvedAddress[];
  const literal = isIP(host);
  try {
    // An IP literal resolves to itself: the system resolver is not asked (a delivery's hot path).
    answers =
      literal !== 0 && !policy.lookup
        ? [{ address: host, family: literal === 6 ? 6 : 4 }]
        : await lookupWithin(policy.lookup ?? systemLookup, host, policy.resolveTimeoutMs ?? RESOLVE_TIMEOUT_MS);
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new TargetRefusedError(`url host ${host} does not resolve${code ? ` (${code})` : ''}`);
  }
  if (answers.length === 0) throw new TargetRefusedError(`url host ${host} does not resolve`);
  if (!policy.allowPrivate) {
    for (const answer of answers) {
      const reason = refusalReason(answer.address);
      if (!reason) continue;
      const subject = isIP(host) ? `url host ${host} is` : `url host ${host} resolves to ${answer.address}, which is`;
      throw new TargetRefusedError(`${subject} ${reason}; webhooks are delivered to public internet addresses only`);
    }
  }
  return answers[0]!;
}
