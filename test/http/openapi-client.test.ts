import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { createTestApp, type TestApp } from '../helpers.ts';
import { WEBHOOK_KEY_A } from '../webhooks/webhooks-fixtures.ts';

/**
 * docs/design.md §16: the standard TypeScript toolchain works from the served /openapi.json. Types generated
 * by openapi-typescript compile; a small openapi-fetch client written against them type-checks
 * under `strict` (any type error fails the test) and then runs against the API over real HTTP:
 * account → key → prices → catalog pages → webhook.
 */

const root = join(import.meta.dir, '..', '..');

/** The client, as a user of the API would write it from the generated `paths`. */
const CLIENT = `import createClient from 'openapi-fetch';
import type { paths } from './api';

export type Seeded = { catalogId: string; search: string };

export async function tour(baseUrl: string, seeded: Seeded, email: string, password: string) {
  const anonymous = createClient<paths>({ baseUrl });

  const account = await anonymous.POST('/v1/accounts', { body: { email, password } });
  if (!account.data) throw new Error(\`sign-up: \${account.response.status} \${JSON.stringify(account.error)}\`);
  const token: string = account.data.session.token;

  const created = await anonymous.POST('/v1/me/keys', {
    headers: { authorization: \`Bearer \${token}\` },
    body: { label: 'openapi-fetch', scopes: ['catalog:read', 'prices:read', 'webhooks:write'] },
  });
  if (!created.data) throw new Error(\`key: \${created.response.status} \${JSON.stringify(created.error)}\`);
  const key: string = created.data.key;

  const client = createClient<paths>({ baseUrl, headers: { 'x-api-key': key } });

  const prices = await client.GET('/v2/prices/{catalog_id}', { params: { path: { catalog_id: seeded.catalogId } } });
  if (!prices.data) throw new Error(\`prices: \${prices.response.status} \${JSON.stringify(prices.error)}\`);

  const names: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await client.GET('/v2/catalog/items', { params: { query: { q: seeded.search, limit: 2, cursor } } });
    if (!page.data) throw new Error(\`catalog: \${page.response.status} \${JSON.stringify(page.error)}\`);
    pages += 1;
    for (const item of page.data.data) names.push(item.market_hash_name);
    cursor = page.data.next_cursor ?? undefined;
  } while (cursor !== undefined && pages < 10);

  const webhook = await client.POST('/v2/webhooks', {
    params: { header: { 'Idempotency-Key': crypto.randomUUID() } },
    body: { url: 'http://127.0.0.1:9/openapi-fetch', event_types: ['price.updated'], description: 'from the generated client' },
  });
  if (!webhook.data) throw new Error(\`webhook: \${webhook.response.status} \${JSON.stringify(webhook.error)}\`);

  // An error answer is typed too: the shared error body.
  const missing = await client.GET('/v2/webhooks/{webhook_id}', { params: { path: { webhook_id: crypto.randomUUID() } } });
  const errorCode: string | undefined = missing.error?.error.code;

  // Deleted again: a live price.updated endpoint would collect deliveries for the suites that follow.
  const deleted = await client.DELETE('/v2/webhooks/{webhook_id}', { params: { path: { webhook_id: webhook.data.id } } });

  return { keyScopes: created.data.scopes, prices: prices.data, names, pages, webhook: webhook.data, missingStatus: missing.response.status, errorCode, deletedStatus: deleted.response.status };
}

/** Never called: each line must fail to type-check, or the types are too loose (an unused @ts-expect-error is an error). */
export function mistakes(client: ReturnType<typeof createClient<paths>>) {
  // @ts-expect-error catalog_id is a string
  void client.GET('/v2/prices/{catalog_id}', { params: { path: { catalog_id: 42 } } });
  // @ts-expect-error not a scope
  void client.POST('/v1/me/keys', { body: { scopes: ['prices:write'] } });
  // @ts-expect-error a webhook needs its url
  void client.POST('/v2/webhooks', { params: { header: { 'Idempotency-Key': 'k' } }, body: { event_types: ['price.updated'] } });
  // @ts-expect-error creating a webhook needs an Idempotency-Key
  void client.POST('/v2/webhooks', { body: { url: 'https://example.com/hook', event_types: ['price.updated'] } });
  // @ts-expect-error no such operation
  void client.GET('/v2/no-such-path');
}
`;

const TSCONFIG = {
  compilerOptions: {
    strict: true,
    noEmit: true,
    target: 'ES2022',
    module: 'ESNext',
    moduleResolution: 'Bundler',
    lib: ['ES2022', 'DOM'],
    types: [],
    skipLibCheck: true,
    noUncheckedIndexedAccess: true,
  },
  files: ['client.ts', 'api.d.ts'],
};

let t: TestApp;
let origin: string;
let dir: string;

beforeAll(async () => {
  t = createTestApp({ config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  await t.deps.ready();
  const server = t.app.listen({ port: 0, hostname: '127.0.0.1' }).server!;
  origin = `http://127.0.0.1:${server.port}`;
  // Inside node_modules, so the client resolves openapi-fetch as an installed package would.
  const cache = join(root, 'node_modules', '.cache');
  mkdirSync(cache, { recursive: true });
  dir = mkdtempSync(join(cache, 'openapi-client-'));
});

afterAll(async () => {
  await t.app.stop();
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A priced item, and three catalog items sharing a search term (two pages of two). */
async function seed() {
  const search = `openapi client ${crypto.randomUUID().slice(0, 8)}`;
  const names = ['A', 'B', 'C'].map((letter) => `Test ${search} ${letter} (Field-Tested)`);
  for (const name of names) {
    await t.deps
      .sql`insert into catalog_items (catalog_id, market_hash_name, type, weapon, exterior) values (${catalogIdFor(name)}, ${name}, 'weapon', 'AK-47', 'field-tested')`;
  }
  const catalogId = catalogIdFor(names[0]!);
  const at = new Date(Date.now() - 30_000);
  await t.deps.sql`
    insert into latest_prices (catalog_id, source, version, price, median_price, bid, volume_7d, quantity, source_time, ingested_at, run_id)
    values (${catalogId}, 'skinport', 'default', '12.34'::numeric, '12.50'::numeric, null, null, 3, ${at}, ${at}, ${crypto.randomUUID()})`;
  return { catalogId, search, names };
}

describe('a typed client generated from /openapi.json', () => {
  test('openapi-typescript types compile, an openapi-fetch client type-checks under strict, and it works over HTTP', async () => {
    const response = await fetch(`${origin}/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as Record<string, unknown>;
    const types = astToString(await openapiTS(document as never));
    writeFileSync(join(dir, 'api.d.ts'), types);
    writeFileSync(join(dir, 'client.ts'), CLIENT);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2));

    const tsc = Bun.spawn([join(root, 'node_modules', '.bin', 'tsc'), '-p', join(dir, 'tsconfig.json')], { cwd: dir, stdout: 'pipe', stderr: 'pipe' });
    const [stdout, stderr, exitCode] = await Promise.all([new Response(tsc.stdout).text(), new Response(tsc.stderr).text(), tsc.exited]);
    expect({ exitCode, output: `${stdout}${stderr}`.trim() }).toEqual({ exitCode: 0, output: '' });

    const seeded = await seed();
    const { tour } = (await import(join(dir, 'client.ts'))) as {
      tour: (
        baseUrl: string,
        seeded: { catalogId: string; search: string },
        email: string,
        password: string,
      ) => Promise<{
        keyScopes: string[];
        prices: { catalog_id: string; versions: unknown };
        names: string[];
        pages: number;
        webhook: { webhook_id?: string; id?: string; url: string; secret: string; event_types: string[] };
        missingStatus: number;
        errorCode: string | undefined;
        deletedStatus: number;
      }>;
    };
    const email = `openapi-client-${crypto.randomUUID()}@example.test`;
    const result = await tour(origin, seeded, email, 'correct horse battery staple');

    expect(result.keyScopes).toEqual(['catalog:read', 'prices:read', 'webhooks:write']);
    expect(result.prices.catalog_id).toBe(seeded.catalogId);
    expect(JSON.stringify(result.prices)).toContain('12.34');
    expect(result.names).toEqual(seeded.names);
    expect(result.pages).toBe(2);
    expect(result.webhook.url).toBe('http://127.0.0.1:9/openapi-fetch');
    expect(result.webhook.secret).toStartWith('whsec_');
    expect(result.webhook.event_types).toEqual(['price.updated']);
    expect({ status: result.missingStatus, code: result.errorCode }).toEqual({ status: 404, code: 'not_found' });
    expect(result.deletedStatus).toBe(204);
  }, 60_000);
});
