import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { certificateChecksum, decodeCertificate, encodeCertificate, itemInsights, validateItemSelector } from '../../shared/inspect/index.ts';
import { createTestApp, errorOf, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * POST /v2/inspect/decode (docs/design.md §10 "Inspect decode") over real Postgres and Redis. The vectors are
 * public ones from test/inspect/inspect-certificate.test.ts (sources listed there), copied rather than
 * imported so that suite's tests are not registered twice.
 */

// vlydev/cs2-masked-inspect vector 1: a real AK-47 with five stickers, key byte 0xE3.
const AK47_STICKERS =
  'E3F3367440334DE2FBE4C345E0CBE0D3E7DB6943400AE0A379E481ECEBE2F36FD9DE2BDB515EA6E30D74D981ECEBE3F37BCBDE640D475DA6E35EFCD881ECEBE3F359D5DE37E9D75DA6436DD3DD81ECEBE3F366DCDE3F8F9BDDA69B43B6DE81ECEBE3F33BC8DEBB1CA3DFA623F7DDDF8B71E293EBFD43382B';
// CSFloat's serializer tests: a standalone charm, key 0xA2.
const CSFLOAT_CHARM = 'A2B2A2BA69A882A28AA192AECAA2D2B700A3A5AAA2B286FA7BA0D684BE72';
// A real CZ75-Auto with four stickers and a charm, key 0xCB.
const CZ75_CHARM =
  'CBDB3F0B6C6170CAD3F4EB60C2E3C9FBC7F3607D7A3DC88B29C8A9CEC3CADB5F80A9CEC3CBDB2289A9CEC3C8DB7381A9CEC3CFDB5F81A3484B4B4BC7BBC369CADDC3CBDB98F67323398B8E554C76F5869D456F8B9352CE341D4900';
// A real StatTrak P250 with 0 kills and two stickers, key 0xED.
const STATTRAK_P250 = 'EDFD3954006B52ECF5C9CD6FEFC5E8DDE4D5580F061EEEAD7BEEA5EDBDED8FE8E5EEFD68EC8FE2E5EBFD01A4D0CF0C35D3A8CD6FAED1856E6D6D6DE19DE5EBA1F81D';
// CSFloat's serializer tests, a tool link (key 0).
const CSFLOAT_A = '00180720DA03280638FBEE88F90340B2026BC03C96';

let t: TestApp;
let key: string;

beforeAll(async () => {
  t = createTestApp();
  key = (await workspaceWithKey(t, { scopes: ['inspect:read'] })).key;
}, 30_000);

afterAll(async () => {
  await t?.close();
});

const decode = (body: unknown, apiKey: string | null = key) =>
  t.request('/v2/inspect/decode', { method: 'POST', headers: apiKey ? { 'x-api-key': apiKey } : {}, json: body });

type Answer = ReturnType<typeof decodeCertificate>;

/** The answer goes through JSON, so it is compared with the decoder's result after the same trip. */
const viaJson = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

describe('POST /v2/inspect/decode: 200', () => {
  test('a real masked link (key byte 0xE3) with five stickers answers the full docs/design.md §10 body', async () => {
    const response = await decode({ link: `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20${AK47_STICKERS}` });
    expect(response.status).toBe(200);
    const body = (await response.json()) as Answer;
    expect(Object.keys(body).sort()).toEqual(['certificate', 'insights', 'item', 'item_id', 'origin', 'quality', 'rarity', 'state']);
    const decoded = decodeCertificate(AK47_STICKERS);
    expect(body).toEqual(viaJson({ ...decoded, insights: itemInsights(decoded.item, decoded.state) }) as Answer);
    expect(body).toMatchObject({
      item: { family: 'weapon', definition_index: 7 },
      rarity: 3,
      quality: 4,
      origin: 8,
      item_id: '46876117973',
      certificate: AK47_STICKERS,
    });
    expect(body.state.stickers!.map((sticker) => sticker.sticker_id)).toEqual([7436, 5144, 6970, 8069, 5592]);
  });

  test('a standalone charm (key 0xA2) is family charm with the charm in charms[0]; a weapon with a charm keeps its offsets', async () => {
    const charm = (await (await decode({ link: CSFLOAT_CHARM })).json()) as Answer;
    expect(charm.item).toEqual({ family: 'charm', definition_index: 1355 });
    expect(charm.state.charms).toEqual([{ slot: 0, charm_id: 36 }]);
    const response = await decode({ link: `steam://run/730//+csgo_econ_action_preview ${CZ75_CHARM.toLowerCase()}` });
    expect(response.status).toBe(200);
    const cz75 = (await response.json()) as Answer;
    expect(cz75.item).toEqual({ family: 'weapon', definition_index: 63 });
    expect(cz75.state.stickers).toHaveLength(4);
    expect(cz75.state.charms![0]).toMatchObject({ slot: 0, charm_id: 83 });
    expect(cz75.state.charms![0]!.offset_z).toBeCloseTo(5.14237, 5);
    expect(cz75.certificate).toBe(CZ75_CHARM);
  });

  test('StatTrak at 0 kills keeps stattrak {value: 0}; a tool certificate has null item_id and origin', async () => {
    const stattrak = (await (await decode({ link: STATTRAK_P250 })).json()) as Answer;
    expect(stattrak.state.stattrak).toEqual({ value: 0 });
    const tool = (await (await decode({ link: CSFLOAT_A })).json()) as Answer;
    expect(tool).toMatchObject({ item_id: null, origin: null, quality: null, rarity: 6 });
  });

  test('needs no Idempotency-Key, and the answer passes validateItemSelector unchanged', async () => {
    for (const link of [AK47_STICKERS, CSFLOAT_CHARM, STATTRAK_P250, CSFLOAT_A]) {
      const response = await decode({ link });
      expect(response.status).toBe(200);
      const answer = (await response.json()) as Answer;
      const result = validateItemSelector(answer);
      expect(result).toEqual({ ok: true, selector: { item: answer.item, state: answer.state } });
    }
  });

  test('an item built by encodeCertificate round-trips through the API with a masked and an unmasked key', async () => {
    const item = {
      item: { definition_index: 500 },
      state: { paint_index: 415, paint_seed: 7, wear: 0.5, name_tag: 'ščř ✓', stickers: [{ slot: 7, sticker_id: 76 }] },
    };
    for (const keyByte of [0, 0x5a]) {
      const certificate = encodeCertificate(item, { key: keyByte });
      const body = (await (await decode({ link: certificate })).json()) as Answer;
      expect(body.item).toEqual({ family: 'knife', definition_index: 500 });
      expect(body.state).toEqual(item.state);
    }
  });
});

describe('POST /v2/inspect/decode: 400', () => {
  test('invalid_certificate for a flipped bit (checksum), bad hex in a link, an odd length and an unreadable protobuf', async () => {
    const flipped = AK47_STICKERS.slice(0, 40) + (AK47_STICKERS[40] === '0' ? '1' : '0') + AK47_STICKERS.slice(41);
    // A payload that is not a protobuf (field number 0 is never valid), correctly signed so only the protobuf fails.
    const payload = Uint8Array.of(0x00, 0x01);
    const garbage = `00${Buffer.from(payload).toString('hex')}${certificateChecksum(0, payload).toString(16).padStart(8, '0')}`;
    const cases = [flipped, 'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20XYZ123', AK47_STICKERS.slice(0, -1), 'FFFFFFFFFFFFFF', garbage];
    for (const link of cases) {
      const response = await decode({ link });
      expect({ link, status: response.status }).toEqual({ link, status: 400 });
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_certificate');
      expect(error.details![0]!.field).toBe('body.link');
      if (link === garbage) expect(error.message).toMatch(/CEconItemPreviewDataBlock/);
    }
  });

  test('invalid_link for legacy S…A…D… and M…A…D… links, saying they need the game coordinator', async () => {
    for (const link of [
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S76561199842063946A49749521570D2751293026650298712',
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20M625254122282020305A6760346663D30614827701953021',
      'S76561199842063946A49749521570D2751293026650298712',
    ]) {
      const response = await decode({ link });
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_link');
      expect(error.message).toMatch(/game coordinator/);
      expect(error.message).toMatch(/does not use/);
    }
  });

  test('invalid_link for text that is not an inspect link', async () => {
    for (const link of ['https://steamcommunity.com/market/listings/730/AK-47', 'hello', 'steam://rungame/570/1/+csgo_econ_action_preview%2000']) {
      const response = await decode({ link });
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_link');
    }
  });

  test('invalid_request naming body.link: missing, empty, not a string, NUL, too long, or an unknown field', async () => {
    for (const body of [{}, { link: '' }, { link: 42 }, { link: `${CSFLOAT_A}\u0000` }, { link: 'A'.repeat(5000) }]) {
      const response = await decode(body);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_request');
      expect(error.details!.map((detail) => detail.field)).toContain('body.link');
    }
    const unknown = await decode({ link: CSFLOAT_A, extra: 1 });
    expect(unknown.status).toBe(400);
    expect((await errorOf(unknown)).code).toBe('invalid_request');
  });
});

describe('POST /v2/inspect/decode: 401 and 403', () => {
  test('401 without a key or with an unknown key', async () => {
    expect((await decode({ link: CSFLOAT_A }, null)).status).toBe(401);
    const response = await decode({ link: CSFLOAT_A }, 'sk_live_not_a_real_key_000000000000');
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe('unauthorized');
  });

  test('403 insufficient_scope for a key without inspect:read', async () => {
    const other = await workspaceWithKey(t, { scopes: ['prices:read'] });
    const response = await decode({ link: CSFLOAT_A }, other.key);
    expect(response.status).toBe(403);
    const error = await errorOf(response);
    expect(error.code).toBe('insufficient_scope');
    expect(error.details).toEqual([{ field: 'scope', message: 'inspect:read' }]);
  });
});
