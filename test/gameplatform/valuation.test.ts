import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { sumDecimals, valueAssets } from '../../shared/gameplatform/valuation.ts';
import { createTestApp } from '../helpers.ts';

/**
 * docs/design.md §14's one valuation rule, on real Postgres: phase version without fallback, stickers and
 * charms as their own catalog items per occurrence, exact sums, unpriced parts named once.
 */

const t = createTestApp();
const sql = t.deps.sql;
// A marketplace no other suite writes latest prices for in this shape: the names below are unique.
const MARKET = 'whitemarket';
const tag = crypto.randomUUID().slice(0, 8);
const knife = `★ Valuation ${tag} Knife | Doppler (Factory New)`;
const plain = `Valuation ${tag} Rifle | Plain (Field-Tested)`;
// Sticker kit 1 and 2, charm 1 (shared/catalog/generate.ts kitCatalogNames): real catalog names.
const STICKER_1 = 'Sticker | Shooter';
const STICKER_2 = 'Sticker | Shooter (Foil)';
const CHARM_1 = "Charm | Lil' Ava";
const RUBY = 415;
const SAPPHIRE = 416;

async function price(name: string, version: string, value: string) {
  await sql`
    insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
    values (${catalogIdFor(name)}, ${MARKET}, ${version}, ${value}::numeric, now(), now(), ${crypto.randomUUID()})
    on conflict (catalog_id, version, source) do update set price = excluded.price`;
}

beforeAll(async () => {
  await t.deps.ready();
  for (const [name, type] of [
    [knife, 'knife'],
    [plain, 'rifle'],
    [STICKER_1, 'sticker'],
    [STICKER_2, 'sticker'],
    [CHARM_1, 'charm'],
  ] as const) {
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogIdFor(name)}, ${name}, ${type}) on conflict do nothing`;
  }
  await price(knife, 'default', '150.00');
  await price(knife, 'ruby', '1200.50');
  await price(plain, 'default', '3.10');
  await price(STICKER_1, 'default', '0.035');
  await price(CHARM_1, 'default', '1.2');
  // STICKER_2 deliberately has no price at this marketplace.
});

afterAll(() => t.close());

describe('valueAssets', () => {
  test('a Ruby is valued at the Ruby price; a phase without a price of its own is unpriced (no fallback to default)', async () => {
    const [ruby, sapphire, plainDoppler] = await valueAssets(sql, MARKET, [
      { catalog_id: catalogIdFor(knife), paint_index: RUBY },
      { catalog_id: catalogIdFor(knife), paint_index: SAPPHIRE },
      { catalog_id: catalogIdFor(knife), paint_index: null },
    ]);
    expect(ruby).toEqual({
      marketplace: MARKET,
      price: '1200.50',
      currency: 'USD',
      stickers_total: '0.00',
      charms_total: '0.00',
      total: '1200.50',
      unpriced: [],
    });
    expect(sapphire!.price).toBeNull();
    expect(sapphire!.total).toBe('0.00');
    expect(sapphire!.unpriced).toEqual(['item']);
    expect(plainDoppler!.price).toBe('150.00');
  });

  test('stickers and charms count as their own catalog items, each occurrence; unpriced parts are named once', async () => {
    const [value] = await valueAssets(sql, MARKET, [
      {
        catalog_id: catalogIdFor(plain),
        paint_index: null,
        stickers: [{ sticker_id: 1 }, { sticker_id: 1 }, { sticker_id: 2 }, { sticker_id: 2 }, { sticker_id: 999_999 }],
        charms: [{ charm_id: 1 }],
      },
    ]);
    // 3.10 + 2 × 0.035 + 1.2, exactly, at the finest scale of the parts.
    expect(value).toEqual({
      marketplace: MARKET,
      price: '3.10',
      currency: 'USD',
      stickers_total: '0.070',
      charms_total: '1.20',
      total: '4.370',
      unpriced: ['sticker:2', 'sticker:999999'],
    });
  });

  test('an asset the catalog does not know has no price; its stickers still count', async () => {
    const [value] = await valueAssets(sql, MARKET, [{ catalog_id: null, paint_index: null, stickers: [{ sticker_id: 1 }] }]);
    expect(value!.price).toBeNull();
    expect(value!.total).toBe('0.035');
    expect(value!.unpriced).toEqual(['item']);
  });

  test('sums are exact decimal arithmetic (no float drift)', () => {
    expect(sumDecimals(['0.1', '0.2'])).toBe('0.30');
    expect(sumDecimals(Array.from({ length: 1000 }, () => '0.001'))).toBe('1.000');
    expect(sumDecimals(['9999999.99', '0.01'])).toBe('10000000.00');
    expect(sumDecimals([])).toBe('0.00');
  });
});
