// Baseline for bench/api.ts: a bare Bun.serve in its own process, answering every request with the
// same small JSON body as GET /v2/health. PORT is required. With BARE_REQUEST_ID=1 it also does what
// docs/design.md §6 asks of every response: an X-Request-Id, the caller's when it is a sane token, else a UUID.
import { requestIdFor } from '../api/plugins/request-context.ts';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('bench/bare-server.ts: PORT must be set');

const startedAt = new Date().toISOString();
const withRequestId = process.env.BARE_REQUEST_ID === '1';

const server = Bun.serve({
  port,
  hostname: '127.0.0.1',
  fetch: (request) =>
    new Response(JSON.stringify({ status: 'ok', version: '0.1.0', started_at: startedAt, uptime_seconds: 1 }), {
      headers: withRequestId ? { 'content-type': 'application/json', 'x-request-id': requestIdFor(request) } : { 'content-type': 'application/json' },
    }),
});

const stop = () => {
  void server.stop(true);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
