import { createHmac } from 'node:crypto';
import { signingKeyOf } from './secrets.ts';

export type WebhookHeaders = { 'webhook-id': string; 'webhook-timestamp': string; 'webhook-signature': string };

/**
 * Standard Webhooks signing (DESIGN 8): `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the decoded secret. `timestamp` is whole seconds since the epoch, the time of this attempt;
 * `messageId` stays the same across retries so receivers can drop duplicates.
 */
export function signWebhook(secret: string, messageId: string, timestamp: number, body: string): WebhookHeaders {
  const signature = createHmac('sha256', signingKeyOf(secret)).update(`${messageId}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': messageId, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}

/** The delivered body: `{id, type, created_at, data}` (DESIGN 8). */
export function webhookBody(event: { id: string; type: string; createdAt: Date; data: unknown }): string {
  return JSON.stringify({ id: event.id, type: event.type, created_at: event.createdAt.toISOString(), data: event.data });
}
