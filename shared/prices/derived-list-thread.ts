/**
 * The derived-list thread (one per DerivedListPool thread): per message, builds one derived keyless
 * list with buildDerivedList, or a new snapshot's index with indexPriceList, and posts the result
 * back, its buffers transferred (not copied). The snapshot's JSON arrives as a view of a
 * SharedArrayBuffer, so no job copies it.
 */
import { buildDerivedList, type DerivedListRequest } from './derived-list.ts';
import { indexPriceList, type SnapshotIndex } from './snapshot-index.ts';

declare const self: Worker;

export type DerivedListJob = { id: number; json: Uint8Array } & ({ kind: 'list'; request: DerivedListRequest } | { kind: 'index' });
export type DerivedListReply =
  | { id: number; ok: true; kind: 'list'; json: Uint8Array; etag: string }
  | { id: number; ok: true; kind: 'index'; index: SnapshotIndex }
  | { id: number; ok: false; message: string };

function transferred(reply: DerivedListReply): ArrayBuffer[] {
  if (!reply.ok) return [];
  if (reply.kind === 'list') return [reply.json.buffer as ArrayBuffer];
  const { nameEnds, starts, ends, items } = reply.index;
  return [nameEnds.buffer, starts.buffer, ends.buffer, ...(items ? [items.buffer] : [])] as ArrayBuffer[];
}

self.onmessage = (event: MessageEvent<DerivedListJob>) => {
  const job = event.data;
  let reply: DerivedListReply;
  try {
    if (job.kind === 'index') reply = { id: job.id, ok: true, kind: 'index', index: indexPriceList(job.json) };
    else {
      const built = buildDerivedList(job.json, job.request);
      reply = { id: job.id, ok: true, kind: 'list', json: built.json, etag: built.etag };
    }
  } catch (error) {
    reply = { id: job.id, ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  self.postMessage(reply, transferred(reply));
  // A parse leaves ~10× the list's size of garbage in this thread's heap: return it now, between
  // jobs, rather than whenever this heap's collector next runs. Only this thread waits for it.
  Bun.gc(true);
};
