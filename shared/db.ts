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
