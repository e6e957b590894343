import postgres from 'postgres';

export type Sql = postgres.Sql;
export type TransactionSql = postgres.TransactionSql;
/** Either the pool or an open transaction: repository functions accept both. */
export type Queryable = Sql | TransactionSql;

export function createSql(databaseUrl: string, options: { max?: number; application?: string } = {}): Sql {
  return postgres(databaseUrl, {
    max: options.max ?? 10,
    connect_timeout: 5,
    idle_timeout: 60,
    onnotice: () => undefined,
    connection: { application_name: options.application ?? 'cs2-platform' },
    types: {
      // Keep bigint and numeric as strings: money is never a JS float (DESIGN 3).
      bigint: postgres.BigInt,
    },
    transform: { undefined: null },
  });
}

/** A COPY text-format field: backslash, tab, newline and carriage return escaped; null is \N. */
function copyField(value: string | number | null): string {
  if (value === null) return '\\N';
  const text = String(value);
  return /[\\\t\n\r]/.test(text) ? text.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : text;
}

/**
 * Streams rows into `target` ("table (col, …)", trusted SQL) with COPY FROM STDIN, the fastest
 * way into Postgres, in chunks of 2 000 rows with back-pressure.
 */
export async function copyRows(tx: TransactionSql, target: string, rows: Iterable<readonly (string | number | null)[]>): Promise<void> {
  const stream = await tx.unsafe(`copy ${target} from stdin`).writable();
  const chunk: string[] = [];
  const flush = () => {
    const text = chunk.join('');
    chunk.length = 0;
    return stream.write(text) ? Promise.resolve() : new Promise<void>((resolve) => stream.once('drain', () => resolve()));
  };
  for (const row of rows) {
    chunk.push(`${row.map(copyField).join('\t')}\n`);
    if (chunk.length >= 2_000) await flush();
  }
  if (chunk.length > 0) await flush();
  await new Promise<void>((resolve, reject) => {
    stream.once('error', reject);
    stream.end(() => resolve());
  });
}
