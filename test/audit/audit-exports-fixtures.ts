import type { Sql } from '../../shared/platform/db.ts';
import { newId } from '../../shared/util/ids.ts';

/**
 * Bulk audit events for export tests and bench/delivery-exports.ts, generated set-based in Postgres
 * (generate_series): `count` events spread evenly over [from, to), plus one just before `from` and
 * one at `to` that an export of the range must leave out. Every event's metadata carries secrets
 * (`password`, a nested `token`) that the export must redact, next to values it must keep.
 */
export async function insertGeneratedAuditEvents(sql: Sql, input: { workspaceId: string; from: Date; to: Date; count: number }): Promise<void> {
  const stepMicros = Math.floor(((input.to.getTime() - input.from.getTime()) * 1000) / input.count);
  if (stepMicros < 1) throw new Error('the range is too short for that many events');
  await sql`
    insert into audit_events (id, workspace_id, occurred_at, source, event_type, resource_type, resource_id, outcome,
                              actor_type, actor_id, request_id, metadata)
    select gen_random_uuid(), ${input.workspaceId}, ${input.from}::timestamptz + (i - 1)::bigint * ${stepMicros}::bigint * interval '1 microsecond',
           case when i % 10 = 0 then 'gameplatform' else 'platform' end, 'bulk.generated', 'thing', 'thing-' || i,
           (array['accepted', 'rejected', 'succeeded', 'failed', 'recorded'])[1 + i % 5], 'api_key', 'key-' || (i % 7), 'req-' || i,
           jsonb_build_object('sequence', i, 'password', 'secret-' || i, 'nested', jsonb_build_object('token', 't-' || i, 'keep', i % 3),
                              'tags', jsonb_build_array('bulk', 'export'))
    from generate_series(1, ${input.count}::int) as i`;
  await sql`
    insert into audit_events (id, workspace_id, occurred_at, source, event_type, resource_type, outcome, actor_type, metadata)
    values (${newId()}, ${input.workspaceId}, ${new Date(input.from.getTime() - 1)}, 'platform', 'bulk.before', 'thing', 'recorded', 'system', '{}'),
           (${newId()}, ${input.workspaceId}, ${input.to}, 'platform', 'bulk.after', 'thing', 'recorded', 'system', '{}')`;
}

/** The ids an export of [from, to) must hold, in its order (oldest first). */
export async function expectedExportIds(sql: Sql, input: { workspaceId: string; from: Date; to: Date }): Promise<string[]> {
  const rows = await sql<{ id: string }[]>`
    select id from audit_events
    where workspace_id = ${input.workspaceId} and occurred_at >= ${input.from} and occurred_at < ${input.to}
    order by occurred_at, id`;
  return rows.map((row) => row.id);
}
