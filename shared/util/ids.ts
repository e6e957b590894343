/**
 * UUID v7: time-ordered, so keyset pagination on (time, id) stays index friendly. `at` sets the
 * time in its first 48 bits (default now): ids of market index runs carry their calculation time,
 * which is what market_index_prices is partitioned by (sql/0011).
 */
export function newId(at?: Date): string {
  return at ? Bun.randomUUIDv7('hex', at) : Bun.randomUUIDv7();
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
