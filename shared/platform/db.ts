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
      // Keep bigint and numeric as strings: money is never a JS float (docs/design.md §3).
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
 * How long the end of a COPY may take once every row is sent. postgres.js never settles a COPY that
 * Postgres refused (an unparseable value: the ErrorResponse arrives after the stream ended, and
 * neither the stream nor the query reports it), which would leave the caller's transaction, and
 * any lock it holds, waiting forever. Past this the COPY is taken as failed, and the transaction
 * rolls back. A COPY of every price of a source ends in well under a second.
 */
const COPY_END_TIMEOUT_MS = 120_000;

/**
 * Streams rows into `target` ("table (col, …)", trusted SQL) with COPY FROM STDIN, the fastest
 * way into Postgres, in chunks of 2 000 rows with back-pressure. Rejects when Postgres refuses a
 * row (after at most `endTimeoutMs`, see COPY_END_TIMEOUT_MS).
 */
export async function copyRows(
  tx: TransactionSql,
  target: string,
  rows: Iterable<readonly (string | number | null)[]>,
  options: { endTimeoutMs?: number } = {},
): Promise<void> {
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
  const timeoutMs = options.endTimeoutMs ?? COPY_END_TIMEOUT_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve, reject) => {
        stream.once('error', reject);
        stream.end(() => resolve());
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`COPY into ${target} did not finish within ${timeoutMs} ms: Postgres refused a row`)), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
