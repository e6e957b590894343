import type { ChangedPrice, EventType } from '../events/outbox.ts';
import { checkSignedUrl, type SignedUrlCheck, signUrl } from '../http/signed-url.ts';
import type { Queryable } from '../platform/db.ts';

/**
 * The pages of a prices.updated event past its first (docs/design.md §8). The event carries the first 1 000
 * changed items; `next_url` leads to the next page, which carries the next `next_url`, null on the
 * last page:
 *
 *   <base>/v2/webhooks/events/<event_id>/pages/<page>?expires=<unix seconds>&signature=<base64url HMAC-SHA256>
 *
 * As for audit export downloads (shared/http/signed-url.ts), the HMAC (SIGNING_KEY) covers the purpose
 * `webhook-event-page`, the event id, the page and the expiry, so the URL needs no API key and
 * editing any part of it makes it a 403.
 * URLs are signed when sent, not stored: each delivery attempt and each page served carries one
 * valid PAGE_URL_TTL_SECONDS from then, so a retry hours later still links to live pages.
 */
export const PAGE_URL_TTL_SECONDS = 24 * 60 * 60;
/**
 * Pages live as long as their event: both are dropped with their day's partitions after
 * RETENTION_OUTBOX_DAYS (at least 3 days: longer than the retry schedule, about 28 h, plus one URL
 * lifetime, so any URL a delivery carried expires before its pages go).
 */
export const MIN_PAGE_RETENTION_DAYS = 3;

export type PageLinks = { signingKey: string; baseUrl: string };

export function eventPagePath(eventId: string, page: number): string {
  return `/v2/webhooks/events/${eventId}/pages/${page}`;
}

const PURPOSE = 'webhook-event-page';

export function signEventPageUrl(links: PageLinks, eventId: string, page: number, now: Date): string {
  const path = eventPagePath(eventId, page);
  return signUrl(links.signingKey, { purpose: PURPOSE, parts: [eventId, page], baseUrl: links.baseUrl, path, ttlSeconds: PAGE_URL_TTL_SECONDS }, now).url;
}

export function checkEventPageSignature(
  signingKey: string,
  eventId: string,
  page: number,
  expires: string | undefined,
  signature: string | undefined,
  now: Date,
): SignedUrlCheck {
  return checkSignedUrl(signingKey, { purpose: PURPOSE, parts: [eventId, page] }, { expires, signature }, now);
}

/** The `data` a delivery sends: a prices.updated event gains its signed `next_url` (null when it has one page). */
export function deliveryData(type: EventType, eventId: string, payload: unknown, links: PageLinks, now: Date): unknown {
  if (type !== 'prices.updated') return payload;
  const stored = payload as { page_count?: number };
  return { ...(payload as object), next_url: (stored.page_count ?? 1) > 1 ? signEventPageUrl(links, eventId, 2, now) : null };
}

export type EventPage = {
  event_id: string;
  type: 'prices.updated';
  source: string;
  run_id: string;
  page: number;
  page_count: number;
  items: ChangedPrice[];
  next_url: string | null;
};

/** One stored page with its event's identity, and the link to the page after it; null once gone. */
export async function findEventPage(db: Queryable, eventId: string, page: number, links: PageLinks, now: Date): Promise<EventPage | null> {
  const [row] = await db<{ items: ChangedPrice[]; source: string; run_id: string; page_count: number }[]>`
    select p.items, o.payload->>'source' as source, o.payload->>'run_id' as run_id, (o.payload->>'page_count')::int as page_count
    from price_event_pages p join event_outbox o on o.id = p.event_id and o.created_at = p.created_at
    where p.event_id = ${eventId} and p.page = ${page} and o.event_type = 'prices.updated'`;
  if (!row) return null;
  return {
    event_id: eventId,
    type: 'prices.updated',
    source: row.source,
    run_id: row.run_id,
    page,
    page_count: row.page_count,
    // Pages stored before bid and volume_7d existed (sql/0012) say null for them.
    items: row.items.map((item) => ({ ...item, bid: item.bid ?? null, volume_7d: item.volume_7d ?? null })),
    next_url: page < row.page_count ? signEventPageUrl(links, eventId, page + 1, now) : null,
  };
}

/** Where page URLs point: PUBLIC_BASE_URL, else the API on this host's PORT (development). */
export function pageLinksFromConfig(config: { SIGNING_KEY?: string; PUBLIC_BASE_URL?: string; PORT: number }): PageLinks {
  return { signingKey: config.SIGNING_KEY!, baseUrl: config.PUBLIC_BASE_URL ?? `http://localhost:${config.PORT}` };
}
