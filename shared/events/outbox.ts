import type { Queryable } from '../platform/db.ts';
import { newId } from '../util/ids.ts';

/** docs/design.md §8: every webhook event type. An endpoint subscribing to anything else is a 400. */
export const EVENT_TYPES = [
  'price.updated',
  'prices.updated',
  'render.completed',
  'render.failed',
  'audit_export.completed',
  'audit_export.failed',
  'trade_intent.created',
  // docs/design.md §15: inventory watch of connected accounts, and the management test event (sent only by
  // POST /v2/webhooks/{id}/test, to that endpoint, whatever its event_types).
  'inventory.changed',
  'item.tradable',
  'webhook.test',
  // docs/design.md §17: reversals read from connected accounts' trade history (shared/gameplatform/trade-history.ts),
  // and the end of an asset's trade protection.
  'trade.reversed',
  'item.protection_ended',
  // docs/design.md §19: a name the catalog lacked became a provisional catalog item (shared/catalog/provisional.ts);
  // market-wide, its data the catalog record.
  'catalog.item_added',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Changed items per prices.updated event, and per page behind its next_url (docs/design.md §8). */
export const PRICES_UPDATED_PAGE_SIZE = 1_000;

/**
 * One changed price of a prices.updated event or page; `previous_price` null when the item is new to
 * the source; `bid` and `volume_7d` as stored with the price (docs/design.md §13), null where the source has none.
 */
export type ChangedPrice = { catalog_id: string; version: string; price: string; previous_price: string | null; bid: string | null; volume_7d: number | null };

/**
 * The stored data of a prices.updated event: the run's first page. Deliveries add `next_url` (signed
 * per attempt, see shared/webhooks/event-pages.ts), so the outbox row never holds an expiring URL.
 */
export type PricesUpdatedPayload = {
  source: string;
  run_id: string;
  ingested_at: string;
  currency: 'USD';
  item_count: number;
  page: 1;
  page_count: number;
  items: ChangedPrice[];
};

/**
 * Writes an event to the outbox, in the caller's transaction (so it exists exactly when the change
 * it announces commits). `workspaceId` null is a market-wide event (price.updated, prices.updated), delivered to
 * every subscribed endpoint; otherwise only that workspace's endpoints receive it. With `endpointId`,
 * only that endpoint receives it.
 */
export async function insertOutboxEvent(
  db: Queryable,
  event: {
    type: EventType;
    workspaceId: string | null;
    /** docs/design.md §15: for this endpoint only, whatever its event_types (webhook.test); otherwise every subscriber. */
    endpointId?: string | null;
    payload: Record<string, unknown>;
    at: Date;
  },
): Promise<string> {
  const id = newId();
  await db`
    insert into event_outbox (id, event_type, workspace_id, endpoint_id, payload, created_at)
    values (${id}, ${event.type}, ${event.workspaceId}, ${event.endpointId ?? null}, ${db.json(event.payload as never)}, ${event.at})`;
  return id;
}

/**
 * Which of `types` some live endpoint subscribes to. Ingest runs write market-wide price events
 * only for those: an event no endpoint can receive would be stored, then expire unread (issue 13,
 * "write only what changed"). An endpoint receives the price events of runs written after it was
 * created; one created while a run is being written starts with the next run.
 */
export async function subscribedEventTypes(db: Queryable, types: readonly EventType[]): Promise<Set<EventType>> {
  const rows = await db<{ event_type: EventType }[]>`
    select distinct subscribed.event_type
    from webhook_endpoints w, unnest(w.event_types) as subscribed (event_type)
    where w.deleted_at is null and w.disabled_at is null
      and w.event_types && ${types as EventType[]}::text[]
      and subscribed.event_type = any(${types as EventType[]}::text[])`;
  return new Set(rows.map((row) => row.event_type));
}
