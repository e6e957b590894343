-- The price stream's log of record (issue 29, docs/architecture.md "Price stream"): each ingest
-- run's changes get their stream positions inside the transaction that writes the prices, so a
-- change exists in the log exactly when it is committed. Redis holds a relayed copy of the log's
-- newest entries (the stream clients read); a failed relay delays entries, never loses them.
--
-- One row per stream entry: up to 500 changes of one run. `position` orders the log and is the
-- entry's stream id (`<position>-0`); `seq` counts the changes in the log up to and including this
-- entry, so a reader finds a hole where an entry's seq - n is not the previous entry's seq.

-- The log's head: the last position and seq handed out. A run takes its positions by updating this
-- one row, whose lock it then holds until it commits: positions are handed out in commit order, so
-- a relay that sees position p committed has seen every position before it.
create table price_stream_head (
  id boolean primary key default true check (id),
  position bigint not null,
  seq bigint not null
);
insert into price_stream_head (position, seq) values (0, 0);

-- Retained like the outbox (RETENTION_OUTBOX_DAYS), by dropping day partitions.
create table price_stream (
  position bigint not null,
  seq bigint not null,
  n integer not null check (n between 1 and 500),
  run_id uuid not null,
  source text not null,
  -- The `prices` event exactly as an unfiltered client receives it: {run_id, source, changes}.
  data text not null,
  -- The run's ingestion time: the partition key, as for the outbox's events.
  created_at timestamptz not null,
  -- When the entry was written, just before its run committed (the fan-out's latency is measured from it).
  appended_at timestamptz not null default clock_timestamp(),
  primary key (position, created_at)
) partition by range (created_at);
create index price_stream_seq_idx on price_stream (seq);
create table price_stream_default partition of price_stream default;

-- Wakes the ingest pool's relay as soon as log rows commit (NOTIFY is delivered on commit); the
-- committing process relays at once itself, and the relay's schedule covers a missed notification.
create function price_stream_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('price_stream', '');
  return null;
end
$$;
create trigger price_stream_notify after insert on price_stream for each statement execute function price_stream_notify();
