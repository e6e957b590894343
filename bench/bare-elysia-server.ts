// Third baseline for bench/api.ts: Elysia alone in its own process, one route answering the same
// small JSON as GET /v2/health and bench/bare-server.ts, with no plugin or hook: what the framework
// itself costs over bare Bun.serve on this machine. PORT is required.
import { Elysia } from 'elysia';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('bench/bare-elysia-server.ts: PORT must be set');

const startedAt = new Date().toISOString();

const app = new Elysia().get('/', () => ({ status: 'ok', version: '0.1.0', started_at: startedAt, uptime_seconds: 1 })).listen({ port, hostname: '127.0.0.1' });

const stop = () => {
  void app.stop(true);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
