import type { Queryable } from '../db.ts';
import { newId } from '../ids.ts';

/** DESIGN 8: every webhook event type. An endpoint subscribing to anything else is a 400. */
export const EVENT_TYPES = [
  'price.updated',
  'render.completed',
  'render.failed',
  'audit_export.completed',
  'audit_export.failed',
  'trade_intent.created',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * Writes an event to the outbox, in the caller's transaction (so it exists exactly when the change
 * it announces commits). `workspaceId` null is a market-wide event (price.updated), delivered to
 * every subscribed endpoint; otherwise only that workspace's endpoints receive it.
 */
export async function insertOutboxEvent(
  db: Queryable,
  event: { type: EventType; workspaceId: string | null; payload: Record<string, unknown>; at: Date },
): Promise<string> {
  const id = newId();
  await db`
    insert into event_outbox (id, event_type, workspace_id, payload, created_at)
    values (${id}, ${event.type}, ${event.workspaceId}, ${db.json(event.payload as never)}, ${event.at})`;
  return id;
}
