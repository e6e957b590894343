-- prices.updated (docs/design.md §8): one outbox event per ingest run and source carries the first 1 000
-- changed items; the rest of the run's changed list is stored here once, in pages of 1 000, and
-- served through the event's signed next_url. One row per page, never per item or per endpoint.
create table price_event_pages (
  event_id uuid not null references event_outbox (id) on delete cascade,
  -- 2, 3, …: page 1 is the event's own payload.
  page integer not null check (page >= 2),
  -- [{catalog_id, version, price, previous_price}], decimal strings, in the run's one order.
  items jsonb not null,
  created_at timestamptz not null,
  primary key (event_id, page)
);
-- The webhooks sweeper drops pages past their retention.
create index price_event_pages_created_idx on price_event_pages (created_at);
