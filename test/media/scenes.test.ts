import { afterAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import type { Scope } from '../../shared/http/scopes.ts';
import { findSceneRevision, type SceneDocument } from '../../shared/media/scenes.ts';
import { jcsCanonicalize } from '../../shared/util/jcs.ts';
import { createTestApp, errorOf, workspaceWithKey } from '../helpers.ts';

/**
 * Scenes (docs/design.md §10) through the real plugins over the real Postgres and Redis: every status code,
 * the ETag recomputed here from the body with this file's own RFC 8785 canonicaliser, immutable
 * revisions, racing updates and workspace isolation.
 */
const t = createTestApp();
afterAll(() => t.close());

/**
 * A second, independent JCS (RFC 8785) for the ETag check: keys by UTF-16 code units, numbers and
 * strings as ECMAScript's JSON.stringify writes them.
 */
function referenceJcs(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(referenceJcs).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${referenceJcs(member)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
const expectedEtag = (body: unknown) => `"${createHash('sha256').update(referenceJcs(body), 'utf8').digest('hex')}"`;

const scene = (overrides: Record<string, unknown> = {}) => ({
  schema: 3,
  kind: 'service-viewer-scene',
  name: 'Showcase',
  presentation: { background: { type: 'color', value: '#112233' }, camera: { preset: 'inspect' }, quality: 'interactive' },
  chrome: { showControls: true, allowFullscreen: true, watermark: null },
  ...overrides,
});
const withPresentation = (presentation: Record<string, unknown>) => scene({ presentation: { ...scene().presentation, ...presentation } });
const withCamera = (camera: Record<string, unknown>) => withPresentation({ camera: { preset: 'inspect', ...camera } });
const withChrome = (chrome: Record<string, unknown>) => scene({ chrome: { ...scene().chrome, ...chrome } });

async function workspace(scopes?: Scope[]) {
  return workspaceWithKey(t, scopes ? { scopes } : {});
}

const post = (key: string, body: unknown, idempotencyKey: string | null = crypto.randomUUID()) =>
  t.request('/v2/scenes', { method: 'POST', headers: { 'x-api-key': key, ...(idempotencyKey ? { 'idempotency-key': idempotencyKey } : {}) }, json: body });
const get = (key: string, path: string, headers: Record<string, string> = {}) => t.request(path, { headers: { 'x-api-key': key, ...headers } });
const put = (key: string, sceneId: string, body: unknown, ifMatch?: string) =>
  t.request(`/v2/scenes/${sceneId}`, { method: 'PUT', headers: { 'x-api-key': key, ...(ifMatch !== undefined ? { 'if-match': ifMatch } : {}) }, json: body });

async function created(key: string, body: unknown = scene()): Promise<{ document: SceneDocument; etag: string }> {
  const response = await post(key, body);
  expect(response.status).toBe(201);
  return { document: (await response.json()) as SceneDocument, etag: response.headers.get('etag')! };
}

async function auditEvents(workspaceId: string, eventType: string) {
  return t.deps.sql<{ resource_id: string; outcome: string; metadata: Record<string, unknown>; request_id: string }[]>`
    select resource_id, outcome, metadata, request_id from audit_events where workspace_id = ${workspaceId} and event_type = ${eventType} order by occurred_at, id`;
}

describe('RFC 8785 canonical JSON (shared/util/jcs.ts)', () => {
  test('orders keys by UTF-16 code units, integer-like keys included, and writes numbers as ECMAScript does', () => {
    // RFC 8785 3.2.3's sorting example and 3.2.2.3's number forms.
    const sorting = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    };
    expect(jcsCanonicalize(sorting)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    );
    // biome-ignore lint/correctness/noPrecisionLoss: RFC 8785's own example: 333333333.33333329 has more digits than a double holds and must serialise as 333333333.3333333
    expect(jcsCanonicalize({ b: 1, '10': 2, '9': 3, a: [1e21, 1e-7, -0, 0.1 + 0.2, 333333333.33333329, 4.5, 2e-3] })).toBe(
      '{"10":2,"9":3,"a":[1e+21,1e-7,0,0.30000000000000004,333333333.3333333,4.5,0.002],"b":1}',
    );
    expect(jcsCanonicalize({ s: '\u2028"\\\u0001/\u00e9' })).toBe('{"s":"\u2028\\"\\\\\\u0001/\u00e9"}');
    expect(jcsCanonicalize(JSON.parse('{"__proto__":1,"a":null}'))).toBe('{"__proto__":1,"a":null}');
    expect(() => jcsCanonicalize({ n: Number.NaN })).toThrow();
    expect(() => jcsCanonicalize({ s: '\ud800' })).toThrow();
  });
});

describe('POST /v2/scenes', () => {
  test('201 answers revision 1 with the defaults filled in, an ETag of the exact body, and a scene.created audit event', async () => {
    const ws = await workspace(['media:write']);
    const response = await post(ws.key, scene({ revision: 7 }));
    expect(response.status).toBe(201);
    const text = await response.text();
    const document = JSON.parse(text) as SceneDocument;
    expect(document).toEqual({
      scene_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      schema: 3,
      kind: 'service-viewer-scene',
      name: 'Showcase',
      // `revision` in the body is ignored: creation is revision 1.
      revision: 1,
      presentation: {
        background: { type: 'color', value: '#112233' },
        camera: { preset: 'inspect', fov: 45, autoRotate: false },
        quality: 'interactive',
        lighting: 'studio',
      },
      chrome: { showControls: true, allowFullscreen: true, watermark: null },
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    expect(response.headers.get('etag')).toBe(expectedEtag(JSON.parse(text)));
    expect(response.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    const [event] = await auditEvents(ws.workspace.id, 'scene.created');
    expect(event).toMatchObject({ resource_id: document.scene_id, outcome: 'succeeded', request_id: response.headers.get('x-request-id')! });
    expect(event!.metadata).toMatchObject({ revision: 1, etag: response.headers.get('etag') });
  });

  test('every enumeration value and bound edge is accepted', async () => {
    const ws = await workspace(['media:write']);
    const accepted = [
      withPresentation({ background: { type: 'color', value: '#a1B2c3D4' } }),
      withPresentation({ background: { type: 'gradient', value: '#000000,#FFFFFF' } }),
      withPresentation({ background: { type: 'transparent', value: null } }),
      ...['inspect', 'front', 'back', 'left', 'right', 'top', 'closeup'].map((preset) => withCamera({ preset })),
      ...['draft', 'interactive', 'high'].map((quality) => withPresentation({ quality })),
      ...['studio', 'soft', 'dramatic'].map((lighting) => withPresentation({ lighting })),
      withCamera({ fov: 20, autoRotate: true }),
      withCamera({ fov: 90 }),
      withCamera({ fov: 33.5 }),
      scene({ name: 'n' }),
      scene({ name: 'é'.repeat(120) }),
      withChrome({ watermark: 'w' }),
      withChrome({ watermark: 'x'.repeat(40), showControls: false, allowFullscreen: false }),
    ];
    for (const body of accepted) {
      const response = await post(ws.key, body);
      expect({ body, status: response.status }).toEqual({ body, status: 201 });
    }
  });

  const invalid: [string, unknown, string][] = [
    ['schema other than 3', scene({ schema: 2 }), 'body.schema'],
    ['another kind', scene({ kind: 'viewer-scene' }), 'body.kind'],
    ['no name', scene({ name: undefined }), 'body.name'],
    ['an empty name', scene({ name: '' }), 'body.name'],
    ['a name of 121 characters', scene({ name: 'x'.repeat(121) }), 'body.name'],
    ['a name with NUL', scene({ name: 'a\u0000b' }), 'body.name'],
    ['an unknown background type', withPresentation({ background: { type: 'image', value: '#112233' } }), 'body.presentation.background.type'],
    ['a named color', withPresentation({ background: { type: 'color', value: 'red' } }), 'body.presentation.background.value'],
    ['a 3-digit color', withPresentation({ background: { type: 'color', value: '#123' } }), 'body.presentation.background.value'],
    [
      'a color with alpha in a gradient',
      withPresentation({ background: { type: 'gradient', value: '#112233ff,#445566' } }),
      'body.presentation.background.value',
    ],
    ['a one-color gradient', withPresentation({ background: { type: 'gradient', value: '#112233' } }), 'body.presentation.background.value'],
    [
      'a transparent background with a value',
      withPresentation({ background: { type: 'transparent', value: '#112233' } }),
      'body.presentation.background.value',
    ],
    ['an unknown camera preset', withCamera({ preset: 'isometric' }), 'body.presentation.camera.preset'],
    ['fov under 20', withCamera({ fov: 19.99 }), 'body.presentation.camera.fov'],
    ['fov over 90', withCamera({ fov: 91 }), 'body.presentation.camera.fov'],
    ['fov as text', withCamera({ fov: '45' }), 'body.presentation.camera.fov'],
    ['autoRotate as text', withCamera({ autoRotate: 'yes' }), 'body.presentation.camera.autoRotate'],
    ['an unknown quality', withPresentation({ quality: 'ultra' }), 'body.presentation.quality'],
    ['an unknown lighting', withPresentation({ lighting: 'neon' }), 'body.presentation.lighting'],
    ['showControls missing', scene({ chrome: { allowFullscreen: true, watermark: null } }), 'body.chrome.showControls'],
    ['allowFullscreen as a number', withChrome({ allowFullscreen: 1 }), 'body.chrome.allowFullscreen'],
    ['an empty watermark', withChrome({ watermark: '' }), 'body.chrome.watermark'],
    ['a watermark of 41 characters', withChrome({ watermark: 'x'.repeat(41) }), 'body.chrome.watermark'],
    ['a fractional revision', scene({ revision: 1.5 }), 'body.revision'],
    ['an unknown top-level field', scene({ theme: 'dark' }), 'body.theme'],
    ['an unknown nested field', withCamera({ zoom: 2 }), 'body.presentation.camera.zoom'],
    ['an unknown background field', withPresentation({ background: { type: 'color', value: '#112233', opacity: 1 } }), 'body.presentation.background.opacity'],
    ['an item selector', scene({ item: { item: { family: 'weapon', definition_index: 7 }, state: {} } }), 'body.item'],
    ['a definition_index', scene({ definition_index: 7 }), 'body.definition_index'],
    ['a paint seed in the camera', withCamera({ paint_seed: 661 }), 'body.presentation.camera.paint_seed'],
    ['wear in the presentation', withPresentation({ wear: 0.07 }), 'body.presentation.wear'],
    ['stickers in the chrome', withChrome({ stickers: [{ slot: 0, sticker_id: 76 }] }), 'body.chrome.stickers'],
    ['a charm', scene({ charms: [{ slot: 0, charm_id: 1 }] }), 'body.charms'],
    ['item state', scene({ state: { paint_index: 44 } }), 'body.state'],
    ['a name tag', scene({ name_tag: 'mine' }), 'body.name_tag'],
    ['no presentation', scene({ presentation: undefined }), 'body.presentation'],
    ['an array body', [scene()], 'body'],
    ['an empty object', {}, 'body.schema'],
  ];
  for (const [what, body, field] of invalid) {
    test(`400 invalid_scene naming ${field} for ${what}`, async () => {
      const ws = await workspace(['media:write']);
      const response = await post(ws.key, body);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_scene');
      expect(error.details?.map((detail) => detail.field)).toContain(field);
    });
  }

  test('item identity and item state are refused with a message saying why', async () => {
    const ws = await workspace(['media:write']);
    const error = await errorOf(await post(ws.key, withCamera({ paint_seed: 661 })));
    expect(error.details).toEqual([{ field: 'body.presentation.camera.paint_seed', message: expect.stringContaining('item identity and item state') }]);
    const unknown = await errorOf(await post(ws.key, withCamera({ zoom: 2 })));
    expect(unknown.details).toEqual([{ field: 'body.presentation.camera.zoom', message: 'unknown field' }]);
  });

  test('an empty body is 400 invalid_scene; a body that is not JSON is 400 malformed_json', async () => {
    const ws = await workspace(['media:write']);
    const empty = await t.request('/v2/scenes', {
      method: 'POST',
      headers: { 'x-api-key': ws.key, 'idempotency-key': 'empty', 'content-type': 'application/json' },
    });
    expect(empty.status).toBe(400);
    expect((await errorOf(empty)).code).toBe('invalid_scene');
    const broken = await t.request('/v2/scenes', {
      method: 'POST',
      headers: { 'x-api-key': ws.key, 'idempotency-key': 'broken', 'content-type': 'application/json' },
      body: '{"schema":',
    });
    expect(broken.status).toBe(400);
    expect((await errorOf(broken)).code).toBe('malformed_json');
  });

  test('replays the original scene with 200, Idempotent-Replayed and the same ETag when the key and body repeat; 409 when the body differs', async () => {
    const ws = await workspace(['media:write']);
    const first = await post(ws.key, scene(), 'scene-1');
    expect(first.status).toBe(201);
    const original = await first.json();
    const replay = await post(ws.key, scene(), 'scene-1');
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(original);
    expect(replay.headers.get('etag')).toBe(first.headers.get('etag'));
    const reused = await post(ws.key, scene({ name: 'Other' }), 'scene-1');
    expect(reused.status).toBe(409);
    expect((await errorOf(reused)).code).toBe('idempotency_key_reused');
    const [row] = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from scenes where workspace_id = ${ws.workspace.id}`;
    expect(row!.count).toBe(1);
    const [denied] = await auditEvents(ws.workspace.id, 'request.denied');
    expect(denied).toMatchObject({ resource_id: 'scenes.create', outcome: 'rejected', metadata: { status: 409, reason: 'idempotency_key_reused' } });
  });

  test('concurrent identical creates make one scene', async () => {
    const ws = await workspace(['media:write']);
    const responses = await Promise.all(Array.from({ length: 6 }, () => post(ws.key, scene(), 'same')));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.every((status) => [200, 201, 409].includes(status))).toBe(true);
    const [row] = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from scenes where workspace_id = ${ws.workspace.id}`;
    expect(row!.count).toBe(1);
  });

  test('400 idempotency_key_required without an Idempotency-Key', async () => {
    const ws = await workspace(['media:write']);
    const response = await post(ws.key, scene(), null);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('idempotency_key_required');
  });

  test('401 without a key or with a wrong one; 403 for a key with media:read only, recorded as rejected', async () => {
    expect((await t.request('/v2/scenes', { method: 'POST', headers: { 'idempotency-key': 'k' }, json: scene() })).status).toBe(401);
    expect((await post('cs2_wrong', scene())).status).toBe(401);
    expect((await t.request('/v2/scenes')).status).toBe(401);
    const reader = await workspace(['media:read']);
    const response = await post(reader.key, scene());
    expect(response.status).toBe(403);
    expect((await errorOf(response)).code).toBe('insufficient_scope');
    const [denied] = await auditEvents(reader.workspace.id, 'request.denied');
    expect(denied).toMatchObject({ resource_id: 'scenes.create', outcome: 'rejected', metadata: { status: 403, required_scope: 'media:write' } });
  });
});

describe('GET /v2/scenes/{scene_id} and /revisions/{n}', () => {
  test('200 with the latest document and its ETag; 304 when If-None-Match names it (also weak or in a list)', async () => {
    const ws = await workspace(['media:write']);
    const { document, etag } = await created(ws.key);
    const response = await get(ws.key, `/v2/scenes/${document.scene_id}`);
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toEqual(document);
    expect(response.headers.get('etag')).toBe(etag);
    expect(response.headers.get('etag')).toBe(expectedEtag(body));
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const cached = await get(ws.key, `/v2/scenes/${document.scene_id}`, { 'if-none-match': ifNoneMatch });
      expect({ ifNoneMatch, status: cached.status }).toEqual({ ifNoneMatch, status: 304 });
      expect(await cached.text()).toBe('');
      expect(cached.headers.get('etag')).toBe(etag);
      expect(cached.headers.get('x-request-id')).toBeTruthy();
    }
    const stale = await get(ws.key, `/v2/scenes/${document.scene_id}`, { 'if-none-match': '"0000"' });
    expect(stale.status).toBe(200);
    const revision = await get(ws.key, `/v2/scenes/${document.scene_id}/revisions/1`, { 'if-none-match': etag });
    expect(revision.status).toBe(304);
  });

  test('media:write reads scenes too; a key without media:read or media:write gets 403', async () => {
    const ws = await workspace(['media:write']);
    const { document } = await created(ws.key);
    expect((await get(ws.key, `/v2/scenes/${document.scene_id}`)).status).toBe(200);
    const other = await adminKey(ws.workspace.id, ['catalog:read']);
    const response = await get(other, `/v2/scenes/${document.scene_id}`);
    expect(response.status).toBe(403);
    expect((await get(other, '/v2/scenes')).status).toBe(403);
    expect((await get(other, `/v2/scenes/${document.scene_id}/revisions/1`)).status).toBe(403);
    const reader = await adminKey(ws.workspace.id, ['media:read']);
    expect((await get(reader, `/v2/scenes/${document.scene_id}`)).status).toBe(200);
  });

  test("404 scene_not_found for an unknown id and for another workspace's scene; 404 revision_not_found for a revision not made", async () => {
    const a = await workspace(['media:write']);
    const b = await workspace(['media:write']);
    const { document, etag } = await created(a.key);
    for (const path of [
      `/v2/scenes/${crypto.randomUUID()}`,
      `/v2/scenes/${crypto.randomUUID()}/revisions/1`,
      `/v2/scenes/${document.scene_id}`,
      `/v2/scenes/${document.scene_id}/revisions/1`,
    ]) {
      const response = await get(b.key, path);
      expect({ path, status: response.status }).toEqual({ path, status: 404 });
      expect((await errorOf(response)).code).toBe('scene_not_found');
    }
    const missing = await get(a.key, `/v2/scenes/${document.scene_id}/revisions/2`);
    expect(missing.status).toBe(404);
    expect((await errorOf(missing)).code).toBe('revision_not_found');
    // Another workspace cannot update it either, nor learn that it exists.
    const foreign = await put(b.key, document.scene_id, scene(), etag);
    expect(foreign.status).toBe(404);
    expect((await errorOf(foreign)).code).toBe('scene_not_found');
    expect(await findSceneRevision(t.deps.sql, b.workspace.id, document.scene_id)).toEqual({ ok: false, code: 'scene_not_found' });
    expect(await findSceneRevision(t.deps.sql, a.workspace.id, document.scene_id, 2)).toEqual({ ok: false, code: 'revision_not_found' });
    expect(await findSceneRevision(t.deps.sql, a.workspace.id, document.scene_id)).toEqual({ ok: true, document, etag, revision: 1 });
  });

  test('400 for a malformed scene id or revision number', async () => {
    const ws = await workspace(['media:write']);
    const { document } = await created(ws.key);
    for (const path of [
      '/v2/scenes/not-a-uuid',
      `/v2/scenes/${document.scene_id}/revisions/0`,
      `/v2/scenes/${document.scene_id}/revisions/1.5`,
      `/v2/scenes/${document.scene_id}/revisions/abc`,
      `/v2/scenes/${document.scene_id}/revisions/99999999999`,
    ]) {
      const response = await get(ws.key, path);
      expect({ path, status: response.status }).toEqual({ path, status: 400 });
    }
  });
});

describe('PUT /v2/scenes/{scene_id}', () => {
  test('200 writes revision n+1 from the latest ETag; earlier revisions never change', async () => {
    const ws = await workspace(['media:write']);
    const { document: first, etag: firstEtag } = await created(ws.key);
    const response = await put(ws.key, first.scene_id, withCamera({ preset: 'closeup', fov: 30 }), firstEtag);
    expect(response.status).toBe(200);
    const second = (await response.json()) as SceneDocument;
    expect(second).toMatchObject({ scene_id: first.scene_id, revision: 2, presentation: { camera: { preset: 'closeup', fov: 30, autoRotate: false } } });
    expect(Date.parse(second.created_at)).toBeGreaterThanOrEqual(Date.parse(first.created_at));
    const secondEtag = response.headers.get('etag')!;
    expect(secondEtag).toBe(expectedEtag(second));
    expect(secondEtag).not.toBe(firstEtag);

    // The latest is revision 2; revision 1 is still exactly what it was, ETag included.
    const latest = await get(ws.key, `/v2/scenes/${first.scene_id}`);
    expect(await latest.json()).toEqual(second);
    expect(latest.headers.get('etag')).toBe(secondEtag);
    const old = await get(ws.key, `/v2/scenes/${first.scene_id}/revisions/1`);
    expect(await old.json()).toEqual(first);
    expect(old.headers.get('etag')).toBe(firstEtag);

    // A third revision from the second's ETag; the body's `revision` is ignored.
    const third = await put(ws.key, first.scene_id, scene({ name: 'Third', revision: 1 }), secondEtag);
    expect(third.status).toBe(200);
    expect(await third.json()).toMatchObject({ revision: 3, name: 'Third' });
    const [event] = await auditEvents(ws.workspace.id, 'scene.updated');
    expect(event).toMatchObject({ resource_id: first.scene_id, outcome: 'succeeded', metadata: { revision: 2, previous_etag: firstEtag, etag: secondEtag } });
    const [rows] = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from scene_revisions where scene_id = ${first.scene_id}`;
    expect(rows!.count).toBe(3);
  });

  test('428 precondition_required without If-Match; 412 etag_mismatch for a stale, weak or wildcard one, recorded as rejected', async () => {
    const ws = await workspace(['media:write']);
    const { document, etag } = await created(ws.key);
    const missing = await put(ws.key, document.scene_id, scene());
    expect(missing.status).toBe(428);
    expect((await errorOf(missing)).code).toBe('precondition_required');
    expect((await put(ws.key, document.scene_id, scene(), etag)).status).toBe(200);
    for (const ifMatch of [etag, `W/${etag}`, '*', '"nope"']) {
      const stale = await put(ws.key, document.scene_id, scene(), ifMatch);
      expect({ ifMatch, status: stale.status }).toEqual({ ifMatch, status: 412 });
      expect((await errorOf(stale)).code).toBe('etag_mismatch');
    }
    const denied = await auditEvents(ws.workspace.id, 'request.denied');
    expect(denied).toHaveLength(4);
    expect(denied[0]).toMatchObject({
      resource_id: 'scenes.update',
      outcome: 'rejected',
      metadata: { status: 412, reason: 'etag_mismatch', scene_id: document.scene_id, latest_revision: 2 },
    });
    // A list naming the latest ETag among others matches.
    const latest = (await get(ws.key, `/v2/scenes/${document.scene_id}`)).headers.get('etag')!;
    expect((await put(ws.key, document.scene_id, scene(), `"old", ${latest}`)).status).toBe(200);
  });

  test('an invalid body is 400 invalid_scene; an unknown scene 404; a media:read key 403', async () => {
    const ws = await workspace(['media:write']);
    const { document, etag } = await created(ws.key);
    const invalid = await put(ws.key, document.scene_id, withCamera({ fov: 100 }), etag);
    expect(invalid.status).toBe(400);
    expect(await errorOf(invalid)).toMatchObject({ code: 'invalid_scene', details: [{ field: 'body.presentation.camera.fov' }] });
    const unknown = await put(ws.key, crypto.randomUUID(), scene(), etag);
    expect(unknown.status).toBe(404);
    expect((await errorOf(unknown)).code).toBe('scene_not_found');
    const reader = await adminKey(ws.workspace.id, ['media:read']);
    expect((await put(reader, document.scene_id, scene(), etag)).status).toBe(403);
    expect((await t.request(`/v2/scenes/${document.scene_id}`, { method: 'PUT', headers: { 'if-match': etag }, json: scene() })).status).toBe(401);
  });

  test('of concurrent updates from the same ETag exactly one wins; the others get 412', async () => {
    const ws = await workspace(['media:write']);
    for (let round = 0; round < 3; round += 1) {
      const { document, etag } = await created(ws.key);
      const responses = await Promise.all(Array.from({ length: 5 }, (_, index) => put(ws.key, document.scene_id, scene({ name: `writer ${index}` }), etag)));
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([200, 412, 412, 412, 412]);
      const [row] = await t.deps.sql<{ latest_revision: number; count: number }[]>`
        select s.latest_revision, (select count(*)::int from scene_revisions r where r.scene_id = s.scene_id) as count from scenes s where s.scene_id = ${document.scene_id}`;
      expect(row).toEqual({ latest_revision: 2, count: 2 });
    }
  });
});

describe('GET /v2/scenes', () => {
  test("lists the workspace's scenes at their latest revision, newest first, a page at a time with a signed cursor; never another workspace's", async () => {
    const ws = await workspace(['media:write']);
    const other = await workspace(['media:write']);
    await created(other.key);
    const made: SceneDocument[] = [];
    for (let index = 0; index < 5; index += 1) made.push((await created(ws.key, scene({ name: `scene ${index}` }))).document);
    const updated = await put(ws.key, made[0]!.scene_id, scene({ name: 'scene 0 v2' }), expectedEtag(made[0]));
    expect(updated.status).toBe(200);

    const seen: SceneDocument[] = [];
    let cursor: string | null = null;
    do {
      const response: Response = await get(ws.key, `/v2/scenes?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as { data: SceneDocument[]; next_cursor: string | null };
      expect(response.headers.get('etag')).toBe(expectedEtag(page));
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen.map((document) => document.name)).toEqual(['scene 4', 'scene 3', 'scene 2', 'scene 1', 'scene 0 v2']);
    expect(seen.at(-1)!.revision).toBe(2);

    const all = await get(ws.key, '/v2/scenes');
    const page = (await all.json()) as { data: SceneDocument[]; next_cursor: string | null };
    expect(page.data).toHaveLength(5);
    expect(page.next_cursor).toBeNull();
    expect((await get(ws.key, '/v2/scenes', { 'if-none-match': all.headers.get('etag')! })).status).toBe(304);
  });

  test('400 for a limit outside 1–100, an unknown filter, or a tampered or foreign cursor', async () => {
    const ws = await workspace(['media:write']);
    const other = await workspace(['media:write']);
    for (let index = 0; index < 2; index += 1) {
      await created(ws.key);
      await created(other.key);
    }
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'kind=scene', 'cursor=abc']) {
      const response = await get(ws.key, `/v2/scenes?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
    }
    expect((await get(ws.key, '/v2/scenes?limit=100')).status).toBe(200);
    const foreign = ((await (await get(other.key, '/v2/scenes?limit=1')).json()) as { next_cursor: string }).next_cursor;
    const response = await get(ws.key, `/v2/scenes?limit=1&cursor=${encodeURIComponent(foreign)}`);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_cursor');
  });
});

async function adminKey(workspaceId: string, scopes: Scope[]): Promise<string> {
  const { adminCreateKey } = await import('../../shared/identity/admin.ts');
  return (await adminCreateKey(t.deps.sql, { workspaceId, label: 'scenes', scopes })).key;
}
