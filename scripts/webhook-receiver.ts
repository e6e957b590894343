/**
 * A local webhook receiver for trying webhooks out (README tour):
 *
 *   npx bun scripts/webhook-receiver.ts <whsec_… secret> [port, default 4000] [--once]
 *
 * Listens on 127.0.0.1, verifies each delivery's Standard Webhooks signature with the endpoint's
 * secret and prints its type and id (a bad signature is answered 400 and printed); any other method
 * gets a 200, so a script can wait until it listens. With --once it exits 0 after the first verified
 * delivery, or 1 when none has arrived within 60 s.
 */
import { Webhook } from 'standardwebhooks';

const [secret, port = '4000'] = process.argv.slice(2).filter((arg) => arg !== '--once');
if (!secret?.startsWith('whsec_')) {
  process.stderr.write('usage: bun scripts/webhook-receiver.ts <whsec_… secret> [port] [--once]\n');
  process.exit(2);
}
const once = process.argv.includes('--once');
const webhook = new Webhook(secret);

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: Number(port),
  async fetch(request) {
    if (request.method !== 'POST') return new Response('a webhook receiver: deliveries are POSTed here\n');
    const body = await request.text();
    try {
      const event = webhook.verify(body, Object.fromEntries(request.headers)) as { id: string; type: string };
      process.stdout.write(`verified ${event.type} ${event.id}\n`);
      // Once this response has gone out, stop and exit 0.
      if (once) setTimeout(() => void server.stop().then(() => process.exit(0)), 0);
      return new Response(null, { status: 204 });
    } catch (error) {
      process.stdout.write(`refused a delivery: ${(error as Error).message}\n`);
      return new Response('bad signature', { status: 400 });
    }
  },
});
process.stdout.write(`listening on http://127.0.0.1:${port}/\n`);
if (once) setTimeout(() => process.exit(1), 60_000);
