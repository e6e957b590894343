import { describe, expect, test } from 'bun:test';
import { CEconItemPreviewDataBlock, decodeHex, generateHex } from '@csfloat/cs2-inspect-serializer';
import fc from 'fast-check';
import {
  CertificateError,
  certificateChecksum,
  type DecodedItem,
  decodeCertificate,
  encodeCertificate,
  InspectLinkError,
  type ItemState,
  itemSelectorSchema,
  itemStateSchema,
  parseInspectLink,
} from '../../shared/inspect/index.ts';

/**
 * Public vectors. Masked ones (key ≠ 0) are real links copied from Steam; key 0 ones come from tools.
 *  - CSFloat's serializer tests (csfloat/cs2-inspect-serializer tests/gen.test.ts), as reproduced by
 *    the vlydev/cs2-masked-inspect ports: CSFLOAT_A, CSFLOAT_B, CSFLOAT_C (charm, key 0xA2).
 *  - vlydev/cs2-masked-inspect README "Known test vectors": vector 1 (AK-47, five stickers, key 0xE3)
 *    and vector 2 (tool link, key 0).
 *  - vlydev/cs2-masked-inspect tests: the Bloodhound Gloves | Bronzed (Minimal Wear) market link and
 *    sticker slab A (charm definition 1355).
 *  - A public Swift app's SkinDetailsTests.swift: a CZ75-Auto with four stickers and a charm, the
 *    same item under two masks (0xCB, 0xE5), a Ruby Karambit certificate and a standalone sticker.
 *  - A public TypeScript test ("reads the real sticker slots and placement from a masked market
 *    link"): a StatTrak P250 with two stickers, kill counter 0, key 0xED.
 *  - @ianlucas/cs2-lib-inspect README: `generateInspectLink(CS2Economy.getById(307))`.
 */
const CSFLOAT_A = '00180720DA03280638FBEE88F90340B2026BC03C96';
const CSFLOAT_B = '00180720C80A280638A4E1F5FB03409A0562040800104C62040801104C62040802104C62040803104C6D4F5E30';
const CSFLOAT_C = 'A2B2A2BA69A882A28AA192AECAA2D2B700A3A5AAA2B286FA7BA0D684BE72';
const VLY_AK47_STICKERS =
  'E3F3367440334DE2FBE4C345E0CBE0D3E7DB6943400AE0A379E481ECEBE2F36FD9DE2BDB515EA6E30D74D981ECEBE3F37BCBDE640D475DA6E35EFCD881ECEBE3F359D5DE37E9D75DA6436DD3DD81ECEBE3F366DCDE3F8F9BDDA69B43B6DE81ECEBE3F33BC8DEBB1CA3DFA623F7DDDF8B71E293EBFD43382B';
const VLY_TOOL = '00183C20B803280538E9A3C5DD0340E102C246A0D1';
const VLY_GLOVES = 'F7E7117909734CF6EF54D0D76FB9DFF1C7F4CF3C702218F4B73AF49F74777777FB87FF000E319B';
const VLY_SLAB = '918191895A9BB191B994A199F991E191339096999181B4F149A98D5C0889';
const CZ75_CHARM =
  'CBDB3F0B6C6170CAD3F4EB60C2E3C9FBC7F3607D7A3DC88B29C8A9CEC3CADB5F80A9CEC3CBDB2289A9CEC3C8DB7381A9CEC3CFDB5F81A3484B4B4BC7BBC369CADDC3CBDB98F67323398B8E554C76F5869D456F8B9352CE341D4900';
const CZ75_CHARM_OTHER_MASK =
  'E5F51125424F5EE4FDDAC54EECCDE7D5E9DD4E535413E6A507E687E0EDE4F571AE87E0EDE5F50CA787E0EDE6F55DAF87E0EDE1F571AF8D66656565E995ED47E4F3EDE5F5B6D85D0D17A5A07B6258DBA8B36B41A5BD7CE028CEE12E';
const RUBY_KARAMBIT = '0018FB03209F032806300338F08BA6E203409C03700807E37A70';
const STANDALONE_STICKER = '0018B909280330046205080010E0267008B9CB7E8A';
const STATTRAK_P250 = 'EDFD3954006B52ECF5C9CD6FEFC5E8DDE4D5580F061EEEAD7BEEA5EDBDED8FE8E5EEFD68EC8FE2E5EBFD01A4D0CF0C35D3A8CD6FAED1856E6D6D6DE19DE5EBA1F81D';
const CS2_LIB_INSPECT = '00180920D802280638004001B9A9F1D4';
/**
 * No public name-tag certificate passes docs/design.md §10's checksum (the one found, SkinDetailsTests.swift's
 * "Blue Gem" AK, is masked but signed over a zero byte; see the refusal test), so this one is pinned
 * from the library's own serialiser: generateHex({defindex 7, paintindex 44, paintseed 661, paintwear
 * 0.07123450189828873, rarity 6, quality 9, killeaterscoretype 0, killeatervalue 1337, customname
 * "Blue Gem"}).
 */
const NAME_TAG_STATTRAK = '001807202C2806300938E5C6C7EC03409505480050B90A5A08426C75652047656D360B815D';
const SWIFT_BLUE_GEM_ZERO_BYTE_CHECKSUM =
  'A7B7265D084A3EA6BFA0878B8FA197AE9F4261604BA4E732A2EFA7F71EADFDAFE5CBD2C287E0C2CAC5A3AFA7B7EBC5ADAFA5B74781BAA7A72799D7AF05A6A0AFA7B783F71EC7C3FC6A87';

const float32 = (value: number) => Math.fround(value);

function expectCertificateError(input: string): CertificateError {
  try {
    decodeCertificate(input);
  } catch (error) {
    expect(error).toBeInstanceOf(CertificateError);
    expect((error as CertificateError).code).toBe('invalid_certificate');
    return error as CertificateError;
  }
  throw new Error(`decoded ${input.slice(0, 40)}… without an error`);
}

function expectLinkError(input: string): InspectLinkError {
  try {
    parseInspectLink(input);
  } catch (error) {
    expect(error).toBeInstanceOf(InspectLinkError);
    expect((error as InspectLinkError).code).toBe('invalid_link');
    return error as InspectLinkError;
  }
  throw new Error(`parsed ${input.slice(0, 40)}… without an error`);
}

/** A certificate around raw payload bytes, signed as docs/design.md §10 says, masked with `key`. */
function sign(payload: Uint8Array, key = 0): string {
  const bytes = Buffer.alloc(payload.length + 5);
  bytes[0] = key;
  bytes.set(payload, 1);
  bytes.writeUInt32BE(certificateChecksum(key, payload), payload.length + 1);
  for (let i = 1; i < bytes.length; i++) bytes[i] = bytes[i]! ^ key;
  return bytes.toString('hex').toUpperCase();
}

/** Re-masks a key-0 certificate with another key, re-signing it (the checksum covers the key byte). */
function remask(hex: string, key: number): string {
  const bytes = Buffer.from(hex, 'hex');
  return sign(bytes.subarray(1, bytes.length - 4), key);
}

describe('decodeCertificate: public vectors', () => {
  test('CSFloat vector A: an AK-47 made by a tool (key 0)', () => {
    expect(decodeCertificate(CSFLOAT_A)).toEqual({
      item: { family: 'weapon', definition_index: 7 },
      state: { paint_index: 474, paint_seed: 306, wear: float32(0.6336590647697449) },
      rarity: 6,
      quality: null,
      origin: null,
      item_id: null,
      certificate: CSFLOAT_A,
    });
  });

  test('CSFloat vector B: four stickers in slots 0–3', () => {
    const decoded = decodeCertificate(CSFLOAT_B);
    expect(decoded.state).toEqual({
      paint_index: 1352,
      paint_seed: 666,
      wear: float32(0.99),
      stickers: [0, 1, 2, 3].map((slot) => ({ slot, sticker_id: 76 })),
    });
  });

  test('CSFloat vector C: a standalone charm with key 0xA2 is family charm with the charm in charms[0]', () => {
    const decoded = decodeCertificate(CSFLOAT_C);
    expect(decoded.item).toEqual({ family: 'charm', definition_index: 1355 });
    expect(decoded.state.charms).toEqual([{ slot: 0, charm_id: 36 }]);
    expect(decoded.state.wear).toBeUndefined(); // no paintwear in the certificate: omitted, not null
    expect(decoded).toMatchObject({ rarity: 3, quality: 12 });
  });

  test('vlydev vector 1: a real AK-47 with five stickers, key 0xE3, slots repeating', () => {
    const decoded = decodeCertificate(VLY_AK47_STICKERS);
    expect(decoded).toMatchObject({
      item: { family: 'weapon', definition_index: 7 },
      rarity: 3,
      quality: 4,
      origin: 8,
      item_id: '46876117973',
    });
    expect(decoded.state.paint_index).toBe(422);
    expect(decoded.state.paint_seed).toBe(922);
    expect(decoded.state.wear).toBeCloseTo(0.04121, 5);
    expect(decoded.state.stickers!.map((sticker) => sticker.sticker_id)).toEqual([7436, 5144, 6970, 8069, 5592]);
    expect(decoded.state.stickers!.map((sticker) => sticker.slot)).toEqual([1, 0, 0, 0, 0]);
    expect(decoded.state.stickers![0]!.offset_x).toBeCloseTo(-0.08702, 5);
    expect(decoded.state.stattrak).toBeUndefined();
  });

  test('vlydev vector 2 (tool link) and the cs2-lib-inspect README link', () => {
    expect(decodeCertificate(VLY_TOOL)).toMatchObject({
      item: { family: 'weapon', definition_index: 60 },
      state: { paint_index: 440, paint_seed: 353, wear: float32(0.005411375779658556) },
      rarity: 5,
    });
    expect(decodeCertificate(CS2_LIB_INSPECT)).toMatchObject({
      item: { family: 'weapon', definition_index: 9 },
      state: { paint_index: 344, paint_seed: 1, wear: 0 },
    });
  });

  test('real gloves (key 0xF7) and a Ruby Karambit are families gloves and knife', () => {
    expect(decodeCertificate(VLY_GLOVES)).toMatchObject({
      item: { family: 'gloves', definition_index: 5027 },
      state: { paint_index: 10008, paint_seed: 461 },
      item_id: '50207885158',
    });
    expect(decodeCertificate(RUBY_KARAMBIT)).toMatchObject({
      item: { family: 'knife', definition_index: 507 },
      state: { paint_index: 415, paint_seed: 412, wear: float32(0.0123) },
    });
  });

  test('a real CZ75-Auto with four stickers and a charm reads the same under two masks', () => {
    const decoded = decodeCertificate(CZ75_CHARM);
    expect(decoded).toMatchObject({ item: { family: 'weapon', definition_index: 63 }, origin: 8, item_id: '50286157940' });
    expect(decoded.state.paint_seed).toBe(482);
    expect(decoded.state.wear).toBeCloseTo(0.3991330564, 9);
    expect(decoded.state.stickers).toHaveLength(4);
    expect(decoded.state.charms).toHaveLength(1);
    expect(decoded.state.charms![0]).toMatchObject({ slot: 0, charm_id: 83 });
    expect(decoded.state.charms![0]!.offset_z).toBeCloseTo(5.14237, 5);
    const other = decodeCertificate(CZ75_CHARM_OTHER_MASK);
    expect({ ...other, certificate: '' }).toEqual({ ...decoded, certificate: '' });
  });

  test('a StatTrak item with 0 kills keeps stattrak {value: 0} (key 0xED)', () => {
    const decoded = decodeCertificate(STATTRAK_P250);
    expect(decoded).toMatchObject({ item: { family: 'weapon', definition_index: 36 }, quality: 9, item_id: '51285548244' });
    expect(decoded.state.stattrak).toEqual({ value: 0 });
    expect(decoded.state.paint_seed).toBe(406);
    expect(decoded.state.stickers!.map(({ slot, sticker_id }) => ({ slot, sticker_id }))).toEqual([
      { slot: 3, sticker_id: 133 },
      { slot: 6, sticker_id: 9452 },
    ]);
  });

  test('a standalone sticker is family sticker; a sticker slab is a charm definition', () => {
    expect(decodeCertificate(STANDALONE_STICKER)).toMatchObject({
      item: { family: 'sticker', definition_index: 1209 },
      state: { stickers: [{ slot: 0, sticker_id: 4960 }] },
    });
    expect(decodeCertificate(VLY_SLAB)).toMatchObject({
      item: { family: 'charm', definition_index: 1355 },
      state: { charms: [{ slot: 0, charm_id: 37 }] },
      rarity: 5,
      quality: 8,
    });
  });

  test('a name tag and a StatTrak counter', () => {
    expect(decodeCertificate(NAME_TAG_STATTRAK).state).toEqual({
      paint_index: 44,
      paint_seed: 661,
      wear: float32(0.07123450189828873),
      stattrak: { value: 1337 },
      name_tag: 'Blue Gem',
    });
  });

  test('lowercase hex decodes and the certificate comes back uppercase', () => {
    expect(decodeCertificate(VLY_GLOVES.toLowerCase()).certificate).toBe(VLY_GLOVES);
  });

  test('every public vector is a valid item selector', () => {
    for (const hex of [
      CSFLOAT_A,
      CSFLOAT_B,
      CSFLOAT_C,
      VLY_AK47_STICKERS,
      VLY_TOOL,
      VLY_GLOVES,
      VLY_SLAB,
      CZ75_CHARM,
      RUBY_KARAMBIT,
      STANDALONE_STICKER,
      STATTRAK_P250,
      CS2_LIB_INSPECT,
      NAME_TAG_STATTRAK,
    ]) {
      const decoded = decodeCertificate(hex);
      expect(itemSelectorSchema.safeParse(decoded).success).toBe(true);
    }
  });
});

describe('parseInspectLink', () => {
  test('reads both Steam link forms with %20 or a space, and the bare hex', () => {
    const forms = [
      `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20${VLY_AK47_STICKERS}`,
      `steam://rungame/730/76561202255233023/+csgo_econ_action_preview ${VLY_AK47_STICKERS}`,
      `steam://run/730//+csgo_econ_action_preview%20${VLY_AK47_STICKERS}`,
      `steam://run/730//+csgo_econ_action_preview ${VLY_AK47_STICKERS.toLowerCase()}`,
      VLY_AK47_STICKERS,
      `  ${VLY_AK47_STICKERS.toLowerCase()}\n`,
    ];
    for (const link of forms) expect(parseInspectLink(link)).toBe(VLY_AK47_STICKERS);
  });

  test('refuses legacy S…A…D… and M…A…D… links, saying they need the game coordinator', () => {
    for (const link of [
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S76561199842063946A49749521570D2751293026650298712',
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20M625254122282020305A6760346663D30614827701953021',
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview S76561198084749846A698323590D7935523998312483177',
      'S76561199842063946A49749521570D2751293026650298712',
      // vlydev's "hybrid" form (hex after D) is still an S…A…D… link
      'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20S76561199323320483A50075495125D1101C4C4FCD4AB10092D31B81',
    ]) {
      expect(expectLinkError(link).message).toMatch(/game coordinator/);
    }
  });

  test('refuses what is not a link or hex: other schemes, other apps, empty, NUL, control characters, over-long', () => {
    for (const link of [
      '',
      '   ',
      'https://steamcommunity.com/market/listings/730/AK-47',
      `steam://rungame/570/76561202255233023/+csgo_econ_action_preview%20${CSFLOAT_A}`,
      `steam://run/730/+csgo_econ_action_preview%20${CSFLOAT_A}`,
      `csgo_econ_action_preview%20${CSFLOAT_A}`,
      `${CSFLOAT_A}\u0000`,
      `steam://run/730//+csgo_econ_action_preview%20${CSFLOAT_A}\u0000`,
      `\u0000${CSFLOAT_A}`,
      `${CSFLOAT_A.slice(0, 10)}\u0007${CSFLOAT_A.slice(10)}`,
      'not hex at all',
      'A'.repeat(1024 * 1024),
    ]) {
      expectLinkError(link);
    }
  });

  test('a link whose certificate is not hex is a bad certificate, not a bad link', () => {
    const certificate = parseInspectLink('steam://run/730//+csgo_econ_action_preview%20ZZ00');
    expect(expectCertificateError(certificate).message).toMatch(/hexadecimal/);
  });

  test('property: any string either parses to a string or throws InspectLinkError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string({ unit: 'binary' }),
          fc.string().map((s) => `steam://run/730//+csgo_econ_action_preview%20${s}`),
        ),
        (input) => {
          try {
            expect(typeof parseInspectLink(input)).toBe('string');
          } catch (error) {
            expect(error).toBeInstanceOf(InspectLinkError);
          }
        },
      ),
      { seed: 1111, numRuns: 2000 },
    );
  });
});

describe('decodeCertificate: every failure is a CertificateError', () => {
  test('one flipped bit anywhere (payload, checksum, key byte) fails the checksum', () => {
    for (const hex of [VLY_AK47_STICKERS, CSFLOAT_A, CZ75_CHARM]) {
      const bytes = Buffer.from(hex, 'hex');
      for (let index = 0; index < bytes.length; index++) {
        for (const bit of [0, 7]) {
          const flipped = Buffer.from(bytes);
          flipped[index] = flipped[index]! ^ (1 << bit);
          expectCertificateError(flipped.toString('hex'));
        }
      }
    }
    expect(expectCertificateError(CSFLOAT_A.slice(0, -1) + (CSFLOAT_A.endsWith('6') ? '7' : '6')).message).toMatch(/checksum/);
  });

  test('a masked certificate signed over a zero byte instead of the key is refused (libraries that skip the check accept it)', () => {
    // Unmasked, the payload is a readable block: only the checksum convention is wrong.
    const bytes = Buffer.from(SWIFT_BLUE_GEM_ZERO_BYTE_CHECKSUM, 'hex').map((byte, index) => (index === 0 ? byte : byte ^ 0xa7));
    expect(CEconItemPreviewDataBlock.fromBinary(bytes.subarray(1, bytes.length - 4)).customname).toBe('Blue Gem');
    expect(expectCertificateError(SWIFT_BLUE_GEM_ZERO_BYTE_CHECKSUM).message).toMatch(/checksum/);
  });

  test('truncated, odd, non-hex, empty, too short, 1 MB and NUL inputs', () => {
    const cases: [string, RegExp][] = [
      [VLY_AK47_STICKERS.slice(0, -2), /checksum/],
      [VLY_AK47_STICKERS.slice(0, -8), /checksum/],
      [CSFLOAT_A.slice(0, 12), /checksum/],
      [CSFLOAT_A.slice(0, 10), /shorter/],
      [CSFLOAT_A.slice(0, -1), /odd/],
      ['ABC', /odd/],
      ['', /empty/],
      ['ZZZZZZZZZZZZ', /hexadecimal/],
      [`${CSFLOAT_A.slice(0, 20)} ${CSFLOAT_A.slice(21)}`, /hexadecimal/],
      [`0x${CSFLOAT_A}`, /hexadecimal/],
      [`${CSFLOAT_A}\u0000`, /hexadecimal/],
      ['\u0000'.repeat(42), /hexadecimal/],
      ['00'.repeat(512 * 1024), /longer/],
      ['Z'.repeat(1024 * 1024), /longer/],
    ];
    for (const [input, message] of cases) expect(expectCertificateError(input).message).toMatch(message);
  });

  test('a correctly signed payload that is not a CEconItemPreviewDataBlock, or names no item, is refused', () => {
    const cases: [Uint8Array, RegExp][] = [
      [Uint8Array.from([0x1a, 0xff]), /readable/], // field 3 as a length-delimited field running past the end
      [Uint8Array.from([0x18]), /readable/], // a tag with no value
      [Uint8Array.from([0x5a, 0x02, 0xc3, 0x28]), /readable/], // customname that is not UTF-8
      [Uint8Array.from([0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), /readable/], // over-long varint
      [Uint8Array.from([0x07]), /readable/], // wire type 7 does not exist
      [Uint8Array.from([0x20, 0x05]), /definition/], // a paint index and nothing else
      [Uint8Array.from([0x00]), /readable|definition/],
    ];
    for (const [payload, message] of cases) {
      for (const key of [0, 0x5a]) expect(expectCertificateError(sign(payload, key)).message).toMatch(message);
    }
  });

  test('state the selector cannot carry is refused: wear outside 0–1 or NaN, seed over 1000, slot over 7, infinite offsets', () => {
    const base = { defindex: 7, stickers: [], keychains: [] };
    const bad: CEconItemPreviewDataBlock[] = [
      { ...base, paintwear: 0x3f800001 }, // just over 1.0
      { ...base, paintwear: 0x7fc00000 }, // NaN
      { ...base, paintwear: 0xbf800000 }, // -1.0
      { ...base, paintseed: 1001 },
      { ...base, stickers: [{ slot: 8, stickerId: 1 }] },
      { ...base, stickers: [{ slot: 0 }] },
      { ...base, stickers: [{ slot: 0, stickerId: 1, wear: 2 }] },
      { ...base, stickers: [{ slot: 0, stickerId: 1, rotation: Number.POSITIVE_INFINITY }] },
      { ...base, keychains: [{ slot: 0, stickerId: 1, offsetZ: Number.NaN }] },
      { ...base, customname: 'x'.repeat(101) },
    ];
    for (const block of bad) expectCertificateError(sign(CEconItemPreviewDataBlock.toBinary(block), 0x33));
  });

  test('property: random bytes and random strings only ever give CertificateError', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }).map((bytes) => Buffer.from(bytes).toString('hex')),
          // correctly signed random payloads reach the protobuf reader
          fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.integer({ min: 0, max: 255 })).map(([payload, key]) => sign(payload, key)),
          fc.string(),
        ),
        (input) => {
          try {
            const decoded = decodeCertificate(input);
            expect(itemSelectorSchema.safeParse(decoded).success).toBe(true);
          } catch (error) {
            expect(error).toBeInstanceOf(CertificateError);
          }
        },
      ),
      { seed: 1212, numRuns: 3000 },
    );
  });
});

// Float32 values a certificate can carry, without -0 (toEqual tells -0 from 0).
const float32Arbitrary = (min: number, max: number) =>
  fc.float({ min: Math.fround(min), max: Math.fround(max), noNaN: true }).map((value) => (Object.is(value, -0) ? 0 : value));
const uint32Arbitrary = fc.integer({ min: 0, max: 0xffff_ffff });

const stickerArbitrary = fc.record(
  {
    slot: fc.integer({ min: 0, max: 7 }),
    stickerId: uint32Arbitrary,
    wear: float32Arbitrary(0, 1),
    scale: float32Arbitrary(-4, 4),
    rotation: float32Arbitrary(-360, 360),
    offsetX: float32Arbitrary(-10, 10),
    offsetY: float32Arbitrary(-10, 10),
  },
  { requiredKeys: ['slot', 'stickerId'] },
);

const charmArbitrary = fc.record(
  {
    slot: fc.integer({ min: 0, max: 4 }),
    stickerId: uint32Arbitrary,
    pattern: uint32Arbitrary,
    offsetX: float32Arbitrary(-20, 20),
    offsetY: float32Arbitrary(-20, 20),
    offsetZ: float32Arbitrary(-20, 20),
  },
  { requiredKeys: ['slot', 'stickerId'] },
);

/** Blocks as the library's generateHex takes them (paintwear as a number; it defaults to 0.001). */
const blockArbitrary = fc.record(
  {
    defindex: fc.oneof(fc.constantFrom(7, 9, 60, 500, 507, 5027, 4613, 1209, 1355, 4001, 1314, 31), uint32Arbitrary),
    paintindex: uint32Arbitrary,
    paintseed: fc.integer({ min: 0, max: 1000 }),
    paintwear: float32Arbitrary(0, 1),
    rarity: fc.integer({ min: 0, max: 99 }),
    quality: fc.integer({ min: 0, max: 20 }),
    origin: fc.integer({ min: 0, max: 30 }),
    inventory: uint32Arbitrary,
    itemid: fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }),
    killeaterscoretype: fc.constant(0),
    killeatervalue: uint32Arbitrary,
    customname: fc.string({ minLength: 1, maxLength: 20 }),
    stickers: fc.array(stickerArbitrary, { maxLength: 6 }),
    keychains: fc.array(charmArbitrary, { maxLength: 2 }),
  },
  { requiredKeys: ['defindex', 'stickers', 'keychains'] },
);

/** What the selector should say about a block the library decoded (mapping of docs/design.md §10). */
function selectorStateFromLibrary(block: CEconItemPreviewDataBlock): ItemState {
  const state: ItemState = {};
  if (block.paintindex !== undefined) state.paint_index = block.paintindex;
  if (block.paintseed !== undefined) state.paint_seed = block.paintseed;
  if (block.paintwear !== undefined) state.wear = block.paintwear;
  if (block.killeatervalue !== undefined || block.killeaterscoretype !== undefined) state.stattrak = { value: block.killeatervalue ?? 0 };
  if (block.customname) state.name_tag = block.customname;
  if (block.stickers.length > 0) {
    state.stickers = block.stickers.map((s) => ({
      slot: s.slot!,
      sticker_id: s.stickerId!,
      ...(s.wear === undefined ? {} : { wear: s.wear }),
      ...(s.scale === undefined ? {} : { scale: s.scale }),
      ...(s.rotation === undefined ? {} : { rotation: s.rotation }),
      ...(s.offsetX === undefined ? {} : { offset_x: s.offsetX }),
      ...(s.offsetY === undefined ? {} : { offset_y: s.offsetY }),
    }));
  }
  if (block.keychains.length > 0) {
    state.charms = block.keychains.map((c) => ({
      slot: c.slot!,
      charm_id: c.stickerId!,
      ...(c.pattern === undefined ? {} : { pattern: c.pattern }),
      ...(c.offsetX === undefined ? {} : { offset_x: c.offsetX }),
      ...(c.offsetY === undefined ? {} : { offset_y: c.offsetY }),
      ...(c.offsetZ === undefined ? {} : { offset_z: c.offsetZ }),
    }));
  }
  return state;
}

function expectAgreesWithLibrary(decoded: DecodedItem, library: CEconItemPreviewDataBlock): void {
  expect(decoded.item.definition_index).toBe(library.defindex!);
  expect(decoded.state).toEqual(selectorStateFromLibrary(library));
  expect(decoded.rarity).toBe(library.rarity ?? null);
  expect(decoded.quality).toBe(library.quality ?? null);
  expect(decoded.origin).toBe(library.origin ?? null);
  // Item id 0 (tool-made charms carry it) is no asset: null.
  expect(decoded.item_id).toBe(library.itemid === undefined || library.itemid === 0n ? null : library.itemid.toString());
  expect(itemStateSchema.safeParse(decoded.state).success).toBe(true);
}

describe('decodeCertificate agrees with @csfloat/cs2-inspect-serializer', () => {
  test('the public vectors decode as the library decodes them', () => {
    for (const hex of [CSFLOAT_A, CSFLOAT_B, CSFLOAT_C, VLY_AK47_STICKERS, VLY_TOOL, VLY_GLOVES, CZ75_CHARM, RUBY_KARAMBIT, STATTRAK_P250, NAME_TAG_STATTRAK]) {
      expectAgreesWithLibrary(decodeCertificate(hex), decodeHex(hex));
    }
  });

  test('property: generated certificates, unmasked and re-masked with a random key, decode as the library decodes them', () => {
    fc.assert(
      fc.property(blockArbitrary, fc.integer({ min: 1, max: 255 }), (block, key) => {
        const hex = generateHex(block);
        const library = decodeHex(hex);
        expectAgreesWithLibrary(decodeCertificate(hex), library);
        // The library reads masked certificates too (without checking them); ours must agree there.
        const masked = remask(hex, key);
        const maskedByLibrary = block.itemid !== undefined && block.paintindex !== undefined && block.inventory !== undefined && block.origin !== undefined;
        const decodedMasked = decodeCertificate(masked);
        expectAgreesWithLibrary(decodedMasked, maskedByLibrary ? decodeHex(masked) : library);
        expect(decodedMasked.certificate).toBe(masked);
      }),
      { seed: 1011, numRuns: 1000 },
    );
  });
});

describe('encodeCertificate', () => {
  test('with key 0 it writes the same hex as the library', () => {
    expect(
      encodeCertificate({
        item: { definition_index: 7 },
        state: { paint_index: 44, paint_seed: 661, wear: 0.07123450189828873, stattrak: { value: 1337 }, name_tag: 'Blue Gem' },
        rarity: 6,
        quality: 9,
      }),
    ).toBe(NAME_TAG_STATTRAK);
  });

  test('re-encoding a real masked certificate with its own key gives the same answer', () => {
    // Not byte for byte: fields the selector drops (inventory, accountid) are not written back.
    for (const [hex, key] of [
      [CZ75_CHARM, 0xcb],
      [STATTRAK_P250, 0xed],
      [CSFLOAT_C, 0xa2],
    ] as const) {
      const decoded = decodeCertificate(hex);
      const again = encodeCertificate(decoded, { key });
      expect(again.slice(0, 2)).toBe(hex.slice(0, 2));
      expect({ ...decodeCertificate(again), certificate: '' }).toEqual({ ...decoded, certificate: '' });
    }
  });

  test('property: decode(encode(selector)) gives the selector back, whatever the key', () => {
    const stateArbitrary = fc.record(
      {
        paint_index: uint32Arbitrary,
        paint_seed: fc.integer({ min: 0, max: 1000 }),
        wear: float32Arbitrary(0, 1),
        stattrak: fc.record({ value: uint32Arbitrary }),
        name_tag: fc.string({ minLength: 1, maxLength: 20 }),
        stickers: fc.array(
          fc.record(
            {
              slot: fc.integer({ min: 0, max: 7 }),
              sticker_id: uint32Arbitrary,
              wear: float32Arbitrary(0, 1),
              scale: float32Arbitrary(-4, 4),
              rotation: float32Arbitrary(-360, 360),
              offset_x: float32Arbitrary(-10, 10),
              offset_y: float32Arbitrary(-10, 10),
            },
            { requiredKeys: ['slot', 'sticker_id'] },
          ),
          { minLength: 1, maxLength: 5 },
        ),
        charms: fc.array(
          fc.record(
            {
              slot: fc.nat(3),
              charm_id: uint32Arbitrary,
              pattern: uint32Arbitrary,
              offset_x: float32Arbitrary(-20, 20),
              offset_y: float32Arbitrary(-20, 20),
              offset_z: float32Arbitrary(-20, 20),
            },
            { requiredKeys: ['slot', 'charm_id'] },
          ),
          { minLength: 1, maxLength: 1 },
        ),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffff_ffff }),
        stateArbitrary,
        fc.option(fc.integer({ min: 0, max: 99 }), { nil: null }),
        fc.option(fc.bigInt({ min: 1n, max: 2n ** 64n - 1n }).map(String), { nil: null }),
        fc.integer({ min: 0, max: 255 }),
        (definitionIndex, state, rarity, itemId, key) => {
          const hex = encodeCertificate({ item: { definition_index: definitionIndex }, state, rarity, item_id: itemId }, { key });
          const decoded = decodeCertificate(hex);
          expect(decoded.item.definition_index).toBe(definitionIndex);
          expect(decoded.state).toEqual(state);
          expect(decoded.rarity).toBe(rarity);
          expect(decoded.item_id).toBe(itemId);
          expect(hex.slice(0, 2)).toBe(key.toString(16).toUpperCase().padStart(2, '0'));
        },
      ),
      { seed: 1013, numRuns: 1000 },
    );
  });
});
