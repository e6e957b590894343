import type { Queryable } from '../../platform/db.ts';

/**
 * item_icons (sql/0023, docs/design.md §18): the icons Steam showed items with, per market_hash_name and price
 * version, with when each was first and last seen. Written by every stored inventory snapshot and by
 * steam's search pages (docs/design.md §19); read by item-images.ts.
 */

/** An icon Steam showed an item with, per name and price version: what item_icons records. */
export type SeenIcon = { market_hash_name: string; version: string; icon_url: string };

/** How stale item_icons.last_seen_at may get before a read that sees the icon again writes it. */
const ICON_LAST_SEEN_RESOLUTION = '1 hour';

/**
 * Records the icons a read saw, in one statement over the distinct icons. A new icon is inserted
 * (first and last seen now); a known one gets last_seen_at only when it is an hour old, so the
 * snapshots of many accounts sharing common icons (or each steam search page) neither rewrite nor lock
 * those rows each time (`on conflict do nothing` takes no lock; the update touches only the rows it
 * changes). Rows go in a fixed order, so two writers never wait on each other's rows in opposite orders.
 */
export async function recordSeenIcons(db: Queryable, icons: readonly SeenIcon[], seenAt: Date): Promise<void> {
  if (icons.length === 0) return;
  const sorted = [...new Map(icons.map((icon) => [`${icon.market_hash_name}\u0000${icon.version}\u0000${icon.icon_url}`, icon])).entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([, icon]) => icon);
  await db`
    with seen as (
      select * from unnest(${sorted.map((icon) => icon.market_hash_name)}::text[], ${sorted.map((icon) => icon.version)}::text[], ${sorted.map((icon) => icon.icon_url)}::text[])
        as s(market_hash_name, version, icon_url)
    ), refreshed as (
      update item_icons i set last_seen_at = ${seenAt}
      from seen s
      where i.market_hash_name = s.market_hash_name and i.version = s.version and i.icon_url = s.icon_url
        and i.last_seen_at < ${seenAt}::timestamptz - ${ICON_LAST_SEEN_RESOLUTION}::interval
    )
    insert into item_icons (market_hash_name, version, icon_url, first_seen_at, last_seen_at)
    select market_hash_name, version, icon_url, ${seenAt}, ${seenAt} from seen
    on conflict do nothing`;
}
