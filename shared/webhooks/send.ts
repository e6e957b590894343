import { isIP } from 'node:net';
import { hostOf, type ResolvedAddress } from './targets.ts';

export type SendResult =
  | { kind: 'response'; status: number; retryAfter: string | null; durationMs: number }
  | { kind: 'error'; error: string; durationMs: number };

/** How much of a receiver's answer is read (and then dropped) so the connection can be reused. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/** The URL with its host replaced by the checked address: the request goes nowhere else. */
export function pinnedUrl(url: URL, address: ResolvedAddress): string {
  const host = address.family === 6 ? `[${address.address}]` : address.address;
  return `${url.protocol}//${host}${url.port ? `:${url.port}` : ''}${url.pathname}${url.search}`;
}

async function drain(response: Response): Promise<void> {
  if (!response.body) return;
  const reader = response.body.getReader();
  let read = 0;
  try {
    while (read <= MAX_RESPONSE_BYTES) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
    await reader.cancel();
  } catch {
    // A receiver that breaks off its body has still answered with its status.
  }
}

/** A failure in words a customer can act on, never the URL (its query may hold their tokens). */
function describeFailure(error: unknown, timeoutMs: number): string {
  const { name, code } = error as { name?: string; code?: string };
  if (name === 'TimeoutError' || name === 'AbortError') return `timed out after ${timeoutMs} ms`;
  if (typeof code === 'string' && /^[A-Z0-9_]{2,60}$/.test(code)) return `connection failed (${code})`;
  return 'connection failed';
}

/**
 * POSTs one signed delivery to the checked address, with the URL's host in the Host header and as
 * the TLS server name (so certificates are verified against the name, not the address). Redirects
 * are not followed: a 3xx comes back as the response. The whole exchange is bounded by `timeoutMs`.
 * `ca` adds a trusted certificate authority (tests with a local TLS receiver).
 */
export async function postWebhook(input: {
  url: URL;
  address: ResolvedAddress;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  ca?: string;
}): Promise<SendResult> {
  const host = hostOf(input.url);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const response = await fetch(pinnedUrl(input.url, input.address), {
      method: 'POST',
      body: input.body,
      headers: {
        ...input.headers,
        host: input.url.host,
        'content-type': 'application/json',
        'user-agent': 'cs2-platform-webhooks/1',
      },
      redirect: 'manual',
      signal: AbortSignal.timeout(input.timeoutMs),
      ...(input.url.protocol === 'https:' ? { tls: { ...(isIP(host) ? {} : { serverName: host }), ...(input.ca ? { ca: input.ca } : {}) } } : {}),
    });
    await drain(response);
    return { kind: 'response', status: response.status, retryAfter: response.headers.get('retry-after'), durationMs: elapsed() };
  } catch (error) {
    return { kind: 'error', error: describeFailure(error, input.timeoutMs), durationMs: elapsed() };
  }
}
