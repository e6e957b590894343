/** UUID v7: time-ordered, so keyset pagination on (time, id) stays index friendly. */
export function newId(): string {
  return Bun.randomUUIDv7();
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}
