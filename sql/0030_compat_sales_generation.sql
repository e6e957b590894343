-- Issue 33 (docs/compat/): a generation number that moves whenever a sales window changes (any
-- statement that inserts, updates or deletes a row of source_sales or item_sales, or truncates one),
-- so a compat build can tell the windows it read last are still the windows (shared/compat/dataset.ts)
-- and keep a document built from them alone (shared/compat/store.ts) instead of reading and
-- rebuilding ~340 000 windows for every keyless snapshot. Statements that change no row (Steam's
-- reads rewrite most windows unchanged) leave it alone.
create table sales_generation (
  id boolean primary key default true check (id),
  n bigint not null
);
insert into sales_generation (id, n) values (true, 0);

create function bump_sales_generation() returns trigger language plpgsql as $$
begin
  if exists (select 1 from changed_rows) then
    update sales_generation set n = n + 1;
  end if;
  return null;
end $$;

create function bump_sales_generation_truncate() returns trigger language plpgsql as $$
begin
  update sales_generation set n = n + 1;
  return null;
end $$;

create trigger source_sales_inserted after insert on source_sales referencing new table as changed_rows for each statement execute function bump_sales_generation();
create trigger source_sales_updated after update on source_sales referencing new table as changed_rows for each statement execute function bump_sales_generation();
create trigger source_sales_deleted after delete on source_sales referencing old table as changed_rows for each statement execute function bump_sales_generation();
create trigger source_sales_truncated after truncate on source_sales for each statement execute function bump_sales_generation_truncate();
create trigger item_sales_inserted after insert on item_sales referencing new table as changed_rows for each statement execute function bump_sales_generation();
create trigger item_sales_updated after update on item_sales referencing new table as changed_rows for each statement execute function bump_sales_generation();
create trigger item_sales_deleted after delete on item_sales referencing old table as changed_rows for each statement execute function bump_sales_generation();
create trigger item_sales_truncated after truncate on item_sales for each statement execute function bump_sales_generation_truncate();

-- The documents themselves move to Redis (shared/compat/store.ts): they are a cache that can be
-- built again from the prices and windows, and writing ~30 MB a snapshot to Redis costs a tenth of
-- writing it into a row here.
drop table compat_documents;
