/**
 * RFC 8785 JSON Canonicalization Scheme (JCS), for hashes that clients must be able to recompute
 * (scene ETags, docs/design.md §10). shared/util/canonical-json.ts is not JCS: it rebuilds objects, and a JS
 * object enumerates integer-like keys ("9" before "10") ahead of the others whatever order they were
 * inserted in, and drops a "__proto__" key; JCS orders every key by UTF-16 code units.
 *
 * - Object keys sorted by UTF-16 code units (the default `Array.prototype.sort` comparison).
 * - Numbers as ECMAScript's Number::toString (what JSON.stringify writes; -0 is "0"); NaN and
 *   Infinity are not JSON and are refused.
 * - Strings with JSON.stringify's escaping, which is exactly RFC 8785 3.2.2.2 (\b \t \n \f \r, other
 *   controls as lowercase \u00xx, `"` and `\`, nothing else); lone surrogates are refused (I-JSON).
 * - Values JSON.stringify would drop (undefined, functions) are dropped from objects and written as
 *   null in arrays, and `toJSON` (Date) is honoured, so the text describes what JSON.stringify sends.
 */
export function jcsCanonicalize(value: unknown): string {
  const text = serialise(value);
  if (text === undefined) throw new TypeError('JCS: the top-level value is not JSON');
  return text;
}

function serialise(value: unknown): string | undefined {
  if (value !== null && typeof value === 'object' && typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new TypeError('JCS: strings must not hold lone surrogates (I-JSON)');
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError('JCS: NaN and Infinity are not JSON numbers');
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('JCS: bigint has no JSON form; send it as a string');
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) return `[${value.map((item) => serialise(item) ?? 'null').join(',')}]`;
      const record = value as Record<string, unknown>;
      const members: string[] = [];
      for (const key of Object.keys(record).sort()) {
        const member = serialise(record[key]);
        if (member !== undefined) members.push(`${serialise(key)}:${member}`);
      }
      return `{${members.join(',')}}`;
    }
    default:
      return undefined;
  }
}
