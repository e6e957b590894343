import type { Queryable } from '../platform/db.ts';
import type { TradeIntentAsset, TradeIntentKind, TradeIntentPosition, TradeIntentRow, TradeIntentState, Valuation } from './trade-intents-model.ts';
import { partnerRiskColumns } from './trades-repository.ts';

/**
 * The `trade_intents` and `trade_reservations` tables (sql/0008; `assets` sql/0025), one function per query. Every
 * state change is a guarded update (`state = 'draft'` in the where), so cancel, expiry and account
 * disconnection never fight over an intent: whichever commits first wins, the others change nothing.
 */
const COLUMNS = (db: Queryable) => db`
  i.id, i.workspace_id, i.account_id, i.kind, i.state, i.external_reference, i.message, i.partner_steam_id,
  i.give, i.receive, i.assets, i.target_trade_id, i.valuation, i.expires_at, i.created_at, i.updated_at,
  to_char(i.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text,
  coalesce((select json_agg(json_build_object('asset_id', r.asset_id, 'expires_at', r.expires_at, 'released_at', r.released_at) order by r.asset_id)
            from trade_reservations r where r.intent_id = i.id), '[]'::json) as reservations,
  ${partnerRiskColumns(db)}`;

export type LiveAccount = { account_id: string; steam_id: string };

/** A connected (not disconnected) game-platform account of the workspace. */
export async function findLiveAccount(db: Queryable, workspaceId: string, accountId: number): Promise<LiveAccount | null> {
  const [row] = await db<LiveAccount[]>`
    select account_id, steam_id from gameplatform_accounts
    where account_id = ${accountId} and workspace_id = ${workspaceId} and disconnected_at is null`;
  return row ?? null;
}

export type AcceptableTarget = { id: string; give: string[]; receive: string[]; owner_steam_id: string };

/**
 * A target an accept_offer may name: an unexpired create_offer draft addressed to `partnerSteamId`,
 * in any workspace (the offer's author and its partner are usually different customers).
 */
export async function findAcceptableTarget(db: Queryable, targetId: string, partnerSteamId: string, now: Date): Promise<AcceptableTarget | null> {
  const [row] = await db<AcceptableTarget[]>`
    select i.id, i.give, i.receive, a.steam_id as owner_steam_id
    from trade_intents i join gameplatform_accounts a on a.account_id = i.account_id
    where i.id = ${targetId} and i.kind = 'create_offer' and i.state = 'draft' and i.expires_at > ${now}
      and i.partner_steam_id = ${partnerSteamId}`;
  return row ?? null;
}

export async function insertTradeIntent(
  db: Queryable,
  input: {
    id: string;
    workspaceId: string;
    accountId: string;
    kind: TradeIntentKind;
    externalReference: string;
    message: string | null;
    partnerSteamId: string | null;
    give: string[];
    receive: string[];
    assets: TradeIntentAsset[];
    targetTradeId: string | null;
    valuation: Valuation;
    expiresAt: Date;
    now: Date;
  },
): Promise<void> {
  await db`
    insert into trade_intents (id, workspace_id, account_id, kind, state, external_reference, message, partner_steam_id,
                               give, receive, assets, target_trade_id, valuation, expires_at, created_at, updated_at)
    values (${input.id}, ${input.workspaceId}, ${input.accountId}, ${input.kind}, 'draft', ${input.externalReference},
            ${input.message}, ${input.partnerSteamId}, ${input.give}::text[], ${input.receive}::text[], ${db.json(input.assets as never)},
            ${input.targetTradeId}, ${db.json(input.valuation as never)}, ${input.expiresAt}, ${input.now}, ${input.now})`;
}

/**
 * One reservation per asset; an asset another active reservation holds is skipped (the unique
 * partial index decides, waiting for a concurrent insert to commit or roll back). Returns the
 * asset ids actually reserved.
 */
export async function reserveAssets(db: Queryable, intentId: string, steamId: string, assetIds: readonly string[], expiresAt: Date): Promise<string[]> {
  if (assetIds.length === 0) return [];
  const rows = await db<{ asset_id: string }[]>`
    insert into trade_reservations (intent_id, steam_id, asset_id, expires_at)
    select ${intentId}, ${steamId}, asset_id, ${expiresAt} from unnest(${assetIds as string[]}::text[]) as t(asset_id)
    on conflict (steam_id, asset_id) where released_at is null do nothing
    returning asset_id`;
  return rows.map((row) => row.asset_id);
}

export type ReservationHolder = { asset_id: string; intent_id: string; workspace_id: string };

/** Who holds the active reservations of these assets now. */
export async function findReservationHolders(db: Queryable, steamId: string, assetIds: readonly string[]): Promise<ReservationHolder[]> {
  return db<ReservationHolder[]>`
    select r.asset_id, r.intent_id, i.workspace_id from trade_reservations r join trade_intents i on i.id = r.intent_id
    where r.steam_id = ${steamId} and r.asset_id = any(${assetIds as string[]}::text[]) and r.released_at is null
    order by r.asset_id`;
}

export async function findTradeIntent(db: Queryable, workspaceId: string, id: string): Promise<TradeIntentRow | null> {
  const [row] = await db<TradeIntentRow[]>`select ${COLUMNS(db)} from trade_intents i where i.id = ${id} and i.workspace_id = ${workspaceId}`;
  return row ?? null;
}

/** One page, newest first, keyset on (created_at, id); one row more than asked tells of a next page. */
export async function listTradeIntents(
  db: Queryable,
  workspaceId: string,
  filters: { state?: TradeIntentState },
  after: TradeIntentPosition | null,
  limit: number,
): Promise<{ rows: TradeIntentRow[]; next: TradeIntentPosition | null }> {
  const rows = await db<TradeIntentRow[]>`
    select ${COLUMNS(db)} from trade_intents i
    where i.workspace_id = ${workspaceId}
      ${filters.state ? db`and i.state = ${filters.state}` : db``}
      ${after ? db`and (i.created_at, i.id) < (${after.created_at}::timestamptz, ${after.id}::uuid)` : db``}
    order by i.created_at desc, i.id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, next: rows.length > limit && last ? { created_at: last.created_at_text, id: last.id } : null };
}

export type EndedIntent = { id: string; workspace_id: string; external_reference: string };

/** Ends drafts (guarded on `state = 'draft'`) and releases their reservations. */
async function endDrafts(db: Queryable, ids: readonly string[], state: 'cancelled' | 'expired', now: Date): Promise<EndedIntent[]> {
  if (ids.length === 0) return [];
  const ended = await db<EndedIntent[]>`
    update trade_intents set state = ${state}, updated_at = ${now}
    where id = any(${ids as string[]}::uuid[]) and state = 'draft'
    returning id, workspace_id, external_reference`;
  if (ended.length > 0) {
    await db`
      update trade_reservations set released_at = ${now}
      where intent_id = any(${ended.map((intent) => intent.id)}::uuid[]) and released_at is null`;
  }
  return ended;
}

/** Cancels one unexpired draft of the workspace; null when it is not one. */
export async function cancelDraft(db: Queryable, workspaceId: string, id: string, now: Date): Promise<EndedIntent | null> {
  const [locked] = await db<{ id: string }[]>`
    select id from trade_intents where id = ${id} and workspace_id = ${workspaceId} and state = 'draft' and expires_at > ${now}
    for update`;
  if (!locked) return null;
  const [ended] = await endDrafts(db, [locked.id], 'cancelled', now);
  return ended ?? null;
}

/** Cancels every draft of an account (it was disconnected). */
export async function cancelDraftsOfAccountRows(db: Queryable, accountId: string | number, now: Date): Promise<EndedIntent[]> {
  const drafts = await db<{ id: string }[]>`
    select id from trade_intents where account_id = ${accountId} and state = 'draft' order by id for update`;
  return endDrafts(
    db,
    drafts.map((draft) => draft.id),
    'cancelled',
    now,
  );
}

/**
 * Expires up to `limit` drafts past `expires_at`, optionally only those holding one of `assets`.
 * Rows another transaction has locked are skipped (it is ending them already), so two sweepers, or
 * a sweeper and a create, never wait on or deadlock with each other.
 */
export async function expireDueDrafts(
  db: Queryable,
  now: Date,
  limit: number,
  assets?: { steamId: string; assetIds: readonly string[] },
): Promise<EndedIntent[]> {
  const due = await db<{ id: string }[]>`
    select i.id from trade_intents i
    where i.state = 'draft' and i.expires_at <= ${now}
      ${
        assets
          ? db`and exists (select 1 from trade_reservations r where r.intent_id = i.id and r.released_at is null
                                  and r.steam_id = ${assets.steamId} and r.asset_id = any(${assets.assetIds as string[]}::text[]))`
          : db``
      }
    order by i.id
    limit ${limit}
    for update skip locked`;
  return endDrafts(
    db,
    due.map((row) => row.id),
    'expired',
    now,
  );
}
