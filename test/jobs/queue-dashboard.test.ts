import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { credentialOf, tokenCheck } from '../../shared/identity/operator-tokens.ts';
import { enqueue, POOLS } from '../../shared/jobs/queues.ts';
import { serveInChromium } from '../browser.ts';
import { createTestApp, errorOf, type TestApp } from '../helpers.ts';

/**
 * Issue 13: the queue dashboard (Bull Board) at /admin/queues is an operator's only (docs/design.md §12):
 * OPERATOR_TOKEN as a bearer token or as the HTTP Basic password, for the page, its API and its
 * files; anyone else gets 401 with the shared error body. The page works offline, and its API
 * answers hostile input with 4xx and the shared body, never a 5xx.
 */

const OPERATOR_TOKEN = 'operator-token-for-the-test-0123';
const bearer = { authorization: `Bearer ${OPERATOR_TOKEN}` };
const basic = (password: string, user = 'ops') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

// What the page callbacks below touch in the browser (the test's own lib has no DOM types).
declare const document: { body: { innerText: string } };

let t: TestApp;

beforeAll(async () => {
  // Queues of its own: the dashboard's actions (pause, add, clean) never touch other suites' jobs.
  t = createTestApp({ config: { OPERATOR_TOKEN, QUEUE_PREFIX: `dashboard${process.pid}` } });
  await t.deps.ready();
});

afterAll(async () => {
  await Promise.all(Object.values(t.deps.queues).map((queue) => queue.obliterate({ force: true })));
  await t.close();
});

async function expectUnauthorized(response: Response) {
  expect(response.status).toBe(401);
  expect(response.headers.get('www-authenticate')).toBe('Basic realm="queue dashboard", charset="UTF-8"');
  const error = await errorOf(response);
  expect(error.code).toBe('unauthorized');
  expect(error.request_id).toBe(response.headers.get('x-request-id')!);
}

describe('operator credentials', () => {
  test('come as a bearer token or the HTTP Basic password; anything malformed is no credential', () => {
    expect(credentialOf(`Bearer ${OPERATOR_TOKEN}`)).toBe(OPERATOR_TOKEN);
    expect(credentialOf(`bearer   ${OPERATOR_TOKEN} `)).toBe(OPERATOR_TOKEN);
    expect(credentialOf(basic(OPERATOR_TOKEN))).toBe(OPERATOR_TOKEN);
    expect(credentialOf(basic(`with:colons:${OPERATOR_TOKEN}`, ''))).toBe(`with:colons:${OPERATOR_TOKEN}`);
    for (const header of [
      null,
      '',
      'Bearer',
      'Bearer ',
      'Basic',
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      'Token abc',
      `Bearer ${'x'.repeat(2_000)}`,
    ]) {
      expect(credentialOf(header)).toBeNull();
    }
  });

  test('match the configured token only, and nothing matches when none is configured', () => {
    const matches = tokenCheck(OPERATOR_TOKEN);
    expect(matches(OPERATOR_TOKEN)).toBe(true);
    for (const candidate of [null, '', `${OPERATOR_TOKEN}x`, OPERATOR_TOKEN.slice(0, -1), OPERATOR_TOKEN.toUpperCase()]) expect(matches(candidate)).toBe(false);
    expect(tokenCheck(undefined)(OPERATOR_TOKEN)).toBe(false);
    expect(tokenCheck(undefined)('')).toBe(false);
  });
});

describe('GET /admin/queues', () => {
  const paths = [
    '/admin/queues',
    '/admin/queues/',
    '/admin/queues/queue/ingest',
    '/admin/queues/api/queues',
    '/admin/queues/api/redis/stats',
    '/admin/queues/static/favicon.ico',
    '/admin/queues/no/such/page',
  ];

  test('anonymous: 401 with a Basic challenge and the shared error body, for the page, its API, its files and unknown paths', async () => {
    for (const path of paths) await expectUnauthorized(await t.request(path));
    await expectUnauthorized(await t.request('/admin/queues/api/queues/ingest/pause', { method: 'PUT' }));
  });

  test('a wrong token, as bearer or Basic password, or an API key or session: 401', async () => {
    for (const authorization of [
      'Bearer wrong-token-wrong-token',
      basic('wrong-token-wrong-token'),
      basic(`${OPERATOR_TOKEN} `),
      `Bearer ${OPERATOR_TOKEN.slice(1)}`,
      basic('', OPERATOR_TOKEN),
    ]) {
      for (const path of paths) await expectUnauthorized(await t.request(path, { headers: { authorization } }));
    }
    await expectUnauthorized(await t.request('/admin/queues', { headers: { 'x-api-key': OPERATOR_TOKEN, cookie: `session=${OPERATOR_TOKEN}` } }));
  });

  test('without OPERATOR_TOKEN configured nobody gets in', async () => {
    const closed = createTestApp();
    try {
      for (const authorization of [undefined, 'Bearer ', basic(''), `Bearer ${OPERATOR_TOKEN}`]) {
        await expectUnauthorized(await closed.request('/admin/queues', { headers: authorization === undefined ? {} : { authorization } }));
      }
    } finally {
      await closed.close();
    }
  });

  test('the operator token opens the page, as bearer or Basic password; the page loads nothing from elsewhere', async () => {
    for (const authorization of [bearer.authorization, basic(OPERATOR_TOKEN), basic(OPERATOR_TOKEN, '')]) {
      const response = await t.request('/admin/queues', { headers: { authorization } });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('content-security-policy')).toContain("default-src 'self'");
      const html = await response.text();
      expect(html).toContain('<base href="/admin/queues/" />');
      expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
      expect(html).not.toContain(OPERATOR_TOKEN);
    }
    const script = /<script defer src="(static\/js\/main\.[^"]+\.js)"/.exec(await (await t.request('/admin/queues', { headers: bearer })).text())?.[1];
    expect(script).toBeDefined();
    const file = await t.request(`/admin/queues/${script}`, { headers: bearer });
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toStartWith('text/javascript');
    expect(file.headers.get('cache-control')).toBe('private, max-age=3600');
    await expectUnauthorized(await t.request(`/admin/queues/${script}`));
  });

  test("its queue list answers with every pool's queue and its counts", async () => {
    await enqueue(t.deps.queues, 'maintenance.cleanup', {}, { jobId: 'dashboard-probe', delay: 3_600_000 });
    const response = await t.request('/admin/queues/api/queues?activeQueue=maintenance&status=delayed&page=1&jobsPerPage=10', { headers: bearer });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { queues: { name: string; counts: Record<string, number>; jobs: { id: string; name: string }[] }[] };
    expect(body.queues.map((queue) => queue.name).sort()).toEqual([...POOLS].sort());
    const maintenance = body.queues.find((queue) => queue.name === 'maintenance')!;
    expect(maintenance.counts.delayed).toBe(1);
    expect(maintenance.jobs).toMatchObject([{ id: 'dashboard-probe', name: 'maintenance.cleanup' }]);
    // The Redis panel reads Redis INFO through BullMQ 6's client (bull-board's adapter expects BullMQ 5's).
    const stats = await t.request('/admin/queues/api/redis/stats', { headers: bearer });
    expect(stats.status).toBe(200);
    expect(((await stats.json()) as { version: string }).version).toMatch(/^\d+\.\d+/);
  });

  test('jobs added from the dashboard go through the job registry: a job of that pool, its payload schema, its options', async () => {
    const add = (pool: string, body: unknown) => t.request(`/admin/queues/api/queues/${pool}/add`, { method: 'POST', headers: bearer, json: body });
    const added = await add('maintenance', { name: 'maintenance.cleanup', data: {}, options: { jobId: 'dashboard-added', delay: 3_600_000 } });
    expect(added.status).toBe(200);
    const job = await t.deps.queues.maintenance.getJob('dashboard-added');
    expect(job?.opts).toMatchObject({ attempts: 3, removeOnComplete: { age: 3_600, count: 1_000 }, delay: 3_600_000 });

    for (const [pool, body, field] of [
      ['maintenance', { name: 'prices.snapshot', data: {} }, 'body.name'],
      ['index', { name: 'prices.snapshot', data: { after_run: 'not-a-uuid' } }, 'body.data.after_run'],
      ['maintenance', { name: 'maintenance.cleanup', data: {}, options: { repeat: { every: 1 } } }, 'body.options'],
      ['maintenance', { name: 'maintenance.cleanup', data: {}, options: { jobId: 'a:b' } }, 'body.options.jobId'],
      ['maintenance', null, 'body'],
    ] as const) {
      const response = await add(pool, body);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).details?.map((detail) => detail.field)).toContain(field);
    }
  });

  test('an operation the job is not in a state for is a 409 with the shared body; an unknown queue a 404', async () => {
    await enqueue(t.deps.queues, 'maintenance.cleanup', {}, { jobId: 'dashboard-waiting' });
    const promoted = await t.request('/admin/queues/api/queues/maintenance/dashboard-waiting/promote', { method: 'PUT', headers: bearer });
    expect(promoted.status).toBe(409);
    // Under the id the request came with, like any other answer of the API.
    expect(await errorOf(promoted)).toMatchObject({ code: 'queue_operation_refused', request_id: promoted.headers.get('x-request-id')! });
    const unknown = await t.request('/admin/queues/api/queues/nowhere/1', { headers: bearer });
    expect(unknown.status).toBe(404);
    expect(await errorOf(unknown)).toMatchObject({ code: 'not_found', message: 'Queue not found' });
  });

  test("changes from another site are refused (a browser sends its Basic credentials to other sites' requests too)", async () => {
    const crossSite = await t.request('/admin/queues/api/queues/maintenance/pause', { method: 'PUT', headers: { ...bearer, 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect((await errorOf(crossSite)).code).toBe('cross_site_request');
    const foreignOrigin = await t.request('/admin/queues/api/queues/maintenance/pause', {
      method: 'PUT',
      headers: { ...bearer, origin: 'https://evil.example', host: 'localhost' },
    });
    expect(foreignOrigin.status).toBe(403);
    expect(await t.deps.queues.maintenance.isPaused()).toBe(false);

    const sameOrigin = await t.request('/admin/queues/api/queues/maintenance/pause', {
      method: 'PUT',
      headers: { ...bearer, 'sec-fetch-site': 'same-origin' },
    });
    expect(sameOrigin.status).toBeLessThan(300);
    expect(await t.deps.queues.maintenance.isPaused()).toBe(true);
    await t.deps.queues.maintenance.resume();
  });

  test('hostile path, query and body values: never a 5xx, every 4xx with the shared error body', async () => {
    const values = ['\u0000', '\ud800', 'x'.repeat(5_000), '..', '-1', '0', '1e400', 'NaN', '<script>', "' or 1=1 --", '{}', '[]'];
    const raw = ['%00', '%ED%A0%80', '%FF', '%', '%zz', '%2525'];
    const encode = (value: string) => (value.isWellFormed() ? encodeURIComponent(value) : '%ED%A0%80');
    const failures: string[] = [];
    const send = async (method: string, path: string, body?: unknown) => {
      const response = await t.request(path, { method, headers: bearer, ...(body === undefined ? {} : { json: body }) });
      const text = await response.text();
      const shared = (() => {
        try {
          return typeof (JSON.parse(text) as { error?: { request_id?: unknown } }).error?.request_id === 'string';
        } catch {
          return false;
        }
      })();
      if (response.status >= 500 || (response.status >= 400 && !shared))
        failures.push(`${method} ${path.slice(0, 120)}: ${response.status} ${text.slice(0, 160)}`);
    };
    const templates = [
      '/admin/queues/api/queues/ingest/V',
      '/admin/queues/api/queues/ingest/V/logs',
      '/admin/queues/api/queues/ingest/V/flow',
      '/admin/queues/api/queues/V/V',
      '/admin/queues/queue/V',
      '/admin/queues/static/V',
    ];
    for (const template of templates) for (const value of [...values.map(encode), ...raw]) await send('GET', template.replaceAll('V', value));
    for (const field of ['activeQueue', 'status', 'page', 'jobsPerPage']) {
      for (const value of [...values.map(encode), ...raw]) await send('GET', `/admin/queues/api/queues?activeQueue=maintenance&${field}=${value}`);
    }
    const mutations: [string, string][] = [
      ['PUT', '/admin/queues/api/queues/maintenance/clean/V'],
      ['PUT', '/admin/queues/api/queues/maintenance/retry/V'],
      ['PUT', '/admin/queues/api/queues/V/promote'],
      ['PUT', '/admin/queues/api/queues/maintenance/V/retry'],
      ['PUT', '/admin/queues/api/queues/maintenance/V/clean'],
      ['PATCH', '/admin/queues/api/queues/maintenance/V/update-data'],
      ['PUT', '/admin/queues/api/queues/maintenance/concurrency'],
      ['POST', '/admin/queues/api/queues/maintenance/add'],
    ];
    const bodies = [
      undefined,
      null,
      [],
      'text',
      1,
      {},
      { name: '\u0000', data: '\ud800' },
      { jobData: null },
      { jobData: { a: '\u0000' } },
      { concurrency: -1 },
      { concurrency: Number.POSITIVE_INFINITY },
    ];
    for (const [method, template] of mutations) {
      for (const value of [...values.map(encode), ...raw]) await send(method, template.replaceAll('V', value), {});
      for (const body of bodies) await send(method, template.replaceAll('V', 'dashboard-probe'), body);
    }
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('the dashboard page in headless Chromium', () => {
  test('signs in with the Basic prompt and lists every queue, with no request leaving the API origin', async () => {
    const served = createTestApp({ config: { OPERATOR_TOKEN, QUEUE_PREFIX: `dashboard${process.pid}` } });
    const { origin, browser, close } = await serveInChromium(served, 'queue-dashboard');
    try {
      const page = await browser.newPage();
      const requested: string[] = [];
      page.on('request', (request) => void requested.push(request.url()));
      const refused: string[] = [];
      page.on('console', (message) => {
        if (/Content Security Policy|Refused to/.test(message.text())) refused.push(message.text());
      });
      // What a browser sends after its sign-in prompt.
      await page.authenticate({ username: 'ops', password: OPERATOR_TOKEN });
      const response = await page.goto(`${origin}/admin/queues`, { waitUntil: 'load', timeout: 20_000 });
      expect(response?.status()).toBe(200);
      // biome-ignore lint/performance/useDomNodeTextContent: innerText, not textContent: only rendered text counts, not script or style source nor hidden nodes
      await page.waitForFunction((names: string[]) => names.every((name) => document.body.innerText.includes(name)), { timeout: 20_000, polling: 100 }, [
        ...POOLS,
      ]);
      expect(requested.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
      // The queue names came from its API, through the same credentials.
      expect(requested.some((url) => url.startsWith(`${origin}/admin/queues/api/queues`))).toBe(true);
      expect(refused).toEqual([]);
    } finally {
      await close();
      await served.close();
    }
  }, 60_000);
});
