/**
 * The derived-list thread (one per DerivedListPool thread): builds one derived keyless list per
 * message with buildDerivedList and posts its bytes back, transferred (not copied). The snapshot's
 * JSON arrives as a view of a SharedArrayBuffer, so no build copies it.
 */
import { buildDerivedList, type DerivedListRequest } from './derived-list.ts';

declare const self: Worker;

export type DerivedListJob = { id: number; json: Uint8Array; request: DerivedListRequest };
export type DerivedListReply = { id: number; ok: true; json: Uint8Array; etag: string } | { id: number; ok: false; message: string };

self.onmessage = (event: MessageEvent<DerivedListJob>) => {
  const { id, json, request } = event.data;
  let reply: DerivedListReply;
  try {
    const built = buildDerivedList(json, request);
    reply = { id, ok: true, json: built.json, etag: built.etag };
  } catch (error) {
    reply = { id, ok: false, message: error instanceof Error ? error.message : String(error) };
  }
  self.postMessage(reply, reply.ok ? [reply.json.buffer as ArrayBuffer] : []);
  // The parse leaves ~10× the list's size of garbage in this thread's heap: return it now, between
  // builds, rather than whenever this heap's collector next runs. Only this thread waits for it.
  Bun.gc(true);
};
