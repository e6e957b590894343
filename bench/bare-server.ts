// Baseline for bench/api.ts: a bare Bun.serve in its own process, answering every request with the
// same small JSON body as GET /v2/health. PORT is required.
const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('bench/bare-server.ts: PORT must be set');

const startedAt = new Date().toISOString();

const server = Bun.serve({
  port,
  hostname: '127.0.0.1',
  fetch: () =>
    new Response(JSON.stringify({ status: 'ok', version: '0.1.0', started_at: startedAt, uptime_seconds: 1 }), {
      headers: { 'content-type': 'application/json' },
    }),
});

const stop = () => {
  void server.stop(true);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
