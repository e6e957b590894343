-- Outbox events owned by one workspace (audit_export.*, render.*, trade_intent.*) go to that
-- workspace's endpoints only; market events (price.updated) have no workspace and go to every
-- subscribed endpoint.
alter table event_outbox add column workspace_id uuid references workspaces (id) on delete cascade;
