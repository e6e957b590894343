import { createHmac } from 'node:crypto';
import { signingKeyOf } from './secrets.ts';

export type WebhookHeaders = { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };

/**
 * Standard Webhooks signing (docs/design.md §8): `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the decoded secret. `timestamp` is whole seconds since the epoch, the time of this attempt;
 * `messageId` stays the same across retries so receivers can drop duplicates. Given several secrets
 * (current, then the previous one of a rotation), the header carries a signature for each.
 */
export function signWebhook(secret: string | readonly string[], messageId: string, timestamp: number, body: string): WebhookHeaders {
  const secrets = typeof secret === 'string' ? [secret] : secret;
  const signed = `${messageId}.${timestamp}.${body}`;
  // docs/design.md §15: during a rotation's overlap, one signature per secret, space-separated, the new one first.
  const signatures = secrets.map((one) => `v1,${createHmac('sha256', signingKeyOf(one)).update(signed).digest('base64')}`);
  return { 'webhook-id': messageId, 'webhook-timestamp': String(timestamp), 'webhook-signature': signatures.join(' ') };
}

/** The delivered body: `{id, type, created_at, data}` (docs/design.md §8). */
export function webhookBody(event: { id: string; type: string; createdAt: Date; data: unknown }): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.createdAt.toISOString(), data: event.data });
}
