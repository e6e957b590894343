import { type AuditActor, insertAuditEvent } from '../audit/events.ts';
import { insertOutboxEvent } from '../events/outbox.ts';
import { ApiError, type ErrorDetail, errors } from '../http/errors.ts';
import type { Queryable, Sql } from '../platform/db.ts';
import type { SourceName } from '../platform/source-names.ts';
import { compareDecimals } from '../util/decimal.ts';
import { newId } from '../util/ids.ts';
import { parseSteamId } from './steam-id.ts';
import type { TradeInventory } from './trade-intents-inventory.ts';
import {
  conflict,
  DEFAULT_VALUATION_MARKETPLACE,
  invalidIntent,
  TRADE_INTENT_KINDS,
  TRADE_INTENT_MAX_LIFETIME_MS,
  TRADE_INVENTORY_MAX_AGE_SECONDS,
  type TradeIntent,
  type TradeIntentAsset,
  type TradeIntentKind,
  toTradeIntent,
  type Valuation,
} from './trade-intents-model.ts';
import {
  cancelDraft,
  cancelDraftsOfAccountRows,
  type EndedIntent,
  expireDueDrafts,
  findAcceptableTarget,
  findLiveAccount,
  findReservationHolders,
  findTradeIntent,
  insertTradeIntent,
  reserveAssets,
} from './trade-intents-repository.ts';
import { type ValuationInput, valuationInputOf, valueTradeSides } from './valuation.ts';

export type TradeIntentMeta = { workspaceId: string; actor: AuditActor; requestId: string | null; now: Date };

export type TradeIntentInput = {
  kind: string;
  account_id: number;
  external_reference: string;
  expires_at: Date;
  message?: string;
  partner_steam_id?: string;
  give?: string[];
  receive?: string[];
  target_trade_id?: string;
  valuation_marketplace?: SourceName;
};

type Side = 'give' | 'receive';
/** A side's assets, whose inventory they must be in, and the request field a problem is reported on. */
type SidePlan = { ids: string[]; ownerSteamId: string; field: string };

/** Rolls the create transaction back when an outgoing asset is already reserved. */
class AssetsReserved extends Error {}

const duplicatesOf = (ids: readonly string[]) => [...new Set(ids.filter((id, index) => ids.indexOf(id) !== index))];

/** Check 1 (docs/design.md §11): the kind, and the fields that kind needs and forbids. */
function checkKind(input: TradeIntentInput): { kind: TradeIntentKind; partnerSteamId: string | null } {
  if (!(TRADE_INTENT_KINDS as readonly string[]).includes(input.kind)) {
    throw invalidIntent('Unknown kind.', [{ field: 'body.kind', message: `must be one of ${TRADE_INTENT_KINDS.join(', ')}` }]);
  }
  const kind = input.kind as TradeIntentKind;
  if (kind === 'accept_offer') {
    if (!input.target_trade_id)
      throw invalidIntent('An accept_offer names the offer it accepts.', [{ field: 'body.target_trade_id', message: 'required for accept_offer' }]);
    // The target fixes both sides and the partner: restating them could only disagree with it.
    for (const field of ['partner_steam_id', 'give', 'receive'] as const) {
      if (input[field] !== undefined)
        throw invalidIntent(`An accept_offer takes its ${field} from the target offer.`, [
          { field: `body.${field}`, message: 'not allowed with accept_offer' },
        ]);
    }
    return { kind, partnerSteamId: null };
  }
  if (input.target_trade_id !== undefined)
    throw invalidIntent('A create_offer has no target.', [{ field: 'body.target_trade_id', message: 'only allowed with accept_offer' }]);
  if (input.partner_steam_id === undefined)
    throw invalidIntent('A create_offer names its partner.', [{ field: 'body.partner_steam_id', message: 'required for create_offer' }]);
  const partner = parseSteamId(input.partner_steam_id);
  if (!partner)
    throw invalidIntent('The partner is not an individual Steam account.', [
      { field: 'body.partner_steam_id', message: 'must be a SteamID64, SteamID2 or SteamID3 of an individual account' },
    ]);
  const give = input.give ?? [];
  const receive = input.receive ?? [];
  if (give.length === 0 && receive.length === 0) {
    throw invalidIntent('A create_offer gives or receives at least one asset.', [{ field: 'body.give', message: 'give and receive must not both be empty' }]);
  }
  for (const [field, ids] of [
    ['give', give],
    ['receive', receive],
  ] as const) {
    const repeated = duplicatesOf(ids);
    if (repeated.length > 0)
      throw invalidIntent(`An asset appears twice in ${field}.`, [{ field: `body.${field}`, message: `repeated asset ids: ${repeated.join(', ')}` }]);
  }
  return { kind, partnerSteamId: partner.steam_id };
}

/** Check 3: in the future, and at most 14 days ahead. */
function checkExpiry(expiresAt: Date, now: Date): void {
  if (expiresAt <= now) throw invalidIntent('expires_at is not in the future.', [{ field: 'body.expires_at', message: 'must be in the future' }]);
  if (expiresAt.getTime() - now.getTime() > TRADE_INTENT_MAX_LIFETIME_MS) {
    throw invalidIntent('expires_at is too far ahead.', [{ field: 'body.expires_at', message: 'must be at most 14 days from now' }]);
  }
}

type PricedAsset = { asset_id: string } & ValuationInput;

/**
 * Check 4: every asset is in its owner's latest snapshot (fetched when missing or older than 10
 * minutes; read with the owner token when this workspace holds one for that SteamID, so protected
 * items in context 16 are seen and refused rather than missing), not protected (docs/design.md §17: detail code `asset_protected`), and tradable now (tradable, and
 * no trade hold still running). Returns what valuation needs, and the intent's `assets` (docs/design.md §18:
 * name, catalog id and image from the records this check already read, so no query is added;
 * give then receive, in request order; docs/decisions.md "Trade intents' assets").
 */
async function checkAssets(
  inventory: TradeInventory,
  sides: Record<Side, SidePlan>,
  meta: { workspaceId: string; now: Date },
): Promise<{ priced: Record<Side, PricedAsset[]>; assets: TradeIntentAsset[] }> {
  const { workspaceId, now } = meta;
  const priced: Record<Side, PricedAsset[]> = { give: [], receive: [] };
  const assets: TradeIntentAsset[] = [];
  const details: ErrorDetail[] = [];
  for (const side of ['give', 'receive'] as const) {
    const plan = sides[side];
    if (plan.ids.length === 0) continue;
    const owner = await inventory.ownerAssets(plan.ownerSteamId, plan.ids, TRADE_INVENTORY_MAX_AGE_SECONDS, workspaceId);
    if (owner.kind === 'upstream_down') {
      // Not the client's fault, and a stale snapshot cannot prove what is tradable now: retry later.
      throw new ApiError(503, 'upstream_unavailable', 'The inventory of an owner cannot be fetched from Steam right now; retry shortly.', undefined, {
        'retry-after': String(owner.retryAfterSeconds),
      });
    }
    if (owner.kind === 'unavailable') {
      details.push({ field: plan.field, message: `the inventory of ${plan.ownerSteamId} cannot be read (${owner.reason})` });
      continue;
    }
    for (const assetId of plan.ids) {
      const asset = owner.assets.get(assetId);
      if (!asset) {
        details.push({ field: plan.field, message: `asset ${assetId} is not in the inventory of ${plan.ownerSteamId}` });
      } else if (asset.protection.protected) {
        // Checked first: a protected item is untradable and may carry a hold date, but protection is why.
        const why = asset.protection.reason === 'market_listing' ? 'listed on the Steam Community Market' : 'trade-protected';
        const until = asset.protection.until ? ` until ${asset.protection.until}` : '';
        details.push({ field: plan.field, code: 'asset_protected', message: `asset_protected: asset ${assetId} is ${why}${until} and cannot be traded` });
      } else if (asset.trade_hold_until !== null && new Date(asset.trade_hold_until) > now) {
        // Checked before `tradable`: Steam marks held items untradable, and the date is the useful part.
        details.push({ field: plan.field, message: `asset ${assetId} is on trade hold until ${new Date(asset.trade_hold_until).toISOString()}` });
      } else if (!asset.tradable) {
        details.push({ field: plan.field, message: `asset ${assetId} is not tradable` });
      } else {
        priced[side].push({ asset_id: assetId, ...valuationInputOf(asset.catalog_id, asset.record) });
        assets.push({ asset_id: assetId, side, market_hash_name: asset.market_hash_name, catalog_id: asset.catalog_id, image: asset.record.image ?? null });
      }
    }
  }
  if (details.length > 0) throw invalidIntent('Some assets are not present and tradable in their owner’s inventory.', details);
  return { priced, assets };
}

/** Check 5: neither side may be worth more than TRADE_MAX_VALUE_USD at the valuation marketplace. */
function checkPolicy(valuation: Valuation, maxValueUsd: number, fields: Record<Side, string>): void {
  const limit = String(maxValueUsd);
  const details: ErrorDetail[] = [];
  if (compareDecimals(valuation.give_total, limit) > 0)
    details.push({ field: fields.give, message: `given assets are worth ${valuation.give_total} USD at ${valuation.marketplace}; the limit is ${limit} USD` });
  if (compareDecimals(valuation.receive_total, limit) > 0)
    details.push({
      field: fields.receive,
      message: `received assets are worth ${valuation.receive_total} USD at ${valuation.marketplace}; the limit is ${limit} USD`,
    });
  if (details.length > 0) throw invalidIntent(`A side of the trade is worth more than the policy limit of ${limit} USD.`, details);
}

async function recordRejection(sql: Sql, meta: TradeIntentMeta, operation: string, reason: string, metadata: Record<string, unknown>): Promise<void> {
  // docs/design.md §7: a 409 is recorded as a rejected request, in its own statement (the change rolled back).
  await insertAuditEvent(sql, {
    workspaceId: meta.workspaceId,
    source: 'gameplatform',
    eventType: 'request.denied',
    resourceType: 'operation',
    resourceId: operation,
    outcome: 'rejected',
    actor: meta.actor,
    requestId: meta.requestId,
    occurredAt: meta.now,
    metadata: { status: 409, reason, ...metadata },
  });
}

function uniqueViolationOn(error: unknown): string | null {
  const candidate = error as { code?: string; constraint_name?: string };
  return candidate?.code === '23505' ? (candidate.constraint_name ?? '') : null;
}

/** Audit events for drafts that ended, in the transaction that ended them. */
async function recordEnded(
  db: Queryable,
  ended: readonly EndedIntent[],
  state: 'cancelled' | 'expired',
  actor: AuditActor,
  requestId: string | null,
  now: Date,
  reason?: string,
) {
  for (const intent of ended) {
    await insertAuditEvent(db, {
      workspaceId: intent.workspace_id,
      source: 'gameplatform',
      eventType: `trade_intent.${state}`,
      resourceType: 'trade_intent',
      resourceId: intent.id,
      outcome: 'succeeded',
      actor,
      requestId,
      occurredAt: now,
      metadata: { external_reference: intent.external_reference, ...(reason ? { reason } : {}) },
    });
  }
}

const SYSTEM_ACTOR: AuditActor = { type: 'system', id: null };

/**
 * POST /v2/trade-intents (docs/design.md §11): the checks in their documented order (kind, account, expiry,
 * target, assets, policy), each a 400 invalid_intent naming the field, then one transaction that
 * writes the draft, one reservation per outgoing asset, the audit event and the outbox event.
 */
export async function createTradeIntent(
  deps: { sql: Sql; inventory: TradeInventory; maxValueUsd: number },
  input: TradeIntentInput,
  meta: TradeIntentMeta,
): Promise<TradeIntent> {
  const { sql } = deps;
  const { kind, partnerSteamId: requestedPartner } = checkKind(input);

  const account = await findLiveAccount(sql, meta.workspaceId, input.account_id);
  if (!account)
    throw invalidIntent('No connected account with this id in your workspace.', [
      { field: 'body.account_id', message: 'not a connected account of this workspace' },
    ]);
  if (requestedPartner === account.steam_id) {
    throw invalidIntent('An account cannot trade with itself.', [{ field: 'body.partner_steam_id', message: 'must differ from the account’s own SteamID' }]);
  }

  checkExpiry(input.expires_at, meta.now);

  let sides: Record<Side, SidePlan>;
  let partnerSteamId: string;
  if (kind === 'accept_offer') {
    const target = await findAcceptableTarget(sql, input.target_trade_id!, account.steam_id, meta.now);
    if (!target) {
      throw invalidIntent('The target is not an open create_offer draft addressed to this account.', [
        { field: 'body.target_trade_id', message: 'must be a draft create_offer whose partner is this account' },
      ]);
    }
    partnerSteamId = target.owner_steam_id;
    // Seen from this account: it gives what the offer asks for and receives what the offer gives.
    sides = {
      give: { ids: target.receive, ownerSteamId: account.steam_id, field: 'body.target_trade_id' },
      receive: { ids: target.give, ownerSteamId: target.owner_steam_id, field: 'body.target_trade_id' },
    };
  } else {
    partnerSteamId = requestedPartner!;
    sides = {
      give: { ids: input.give ?? [], ownerSteamId: account.steam_id, field: 'body.give' },
      receive: { ids: input.receive ?? [], ownerSteamId: partnerSteamId, field: 'body.receive' },
    };
  }

  const { priced, assets } = await checkAssets(deps.inventory, sides, meta);
  const marketplace = input.valuation_marketplace ?? DEFAULT_VALUATION_MARKETPLACE;
  const totals = await valueTradeSides(sql, marketplace, priced);
  const valuation: Valuation = {
    marketplace,
    give_total: totals.give_total,
    receive_total: totals.receive_total,
    currency: 'USD',
    unpriced_asset_ids: totals.unpriced,
  };
  checkPolicy(valuation, deps.maxValueUsd, { give: sides.give.field, receive: sides.receive.field });

  const outgoing = sides.give.ids;
  const id = newId();
  // A draft past expires_at still holding one of these assets is ended now rather than at the
  // sweeper's next run, so expiry frees an asset at the instant it is due.
  if (outgoing.length > 0) {
    await sql.begin(async (tx) => {
      const expired = await expireDueDrafts(tx, meta.now, outgoing.length, { steamId: account.steam_id, assetIds: outgoing });
      await recordEnded(tx, expired, 'expired', SYSTEM_ACTOR, null, meta.now);
    });
  }

  try {
    return await sql.begin(async (tx) => {
      await insertTradeIntent(tx, {
        id,
        workspaceId: meta.workspaceId,
        accountId: account.account_id,
        kind,
        externalReference: input.external_reference,
        message: input.message ?? null,
        partnerSteamId,
        give: sides.give.ids,
        receive: sides.receive.ids,
        assets,
        targetTradeId: kind === 'accept_offer' ? input.target_trade_id! : null,
        valuation,
        expiresAt: input.expires_at,
        now: meta.now,
      });
      const reserved = await reserveAssets(tx, id, account.steam_id, outgoing, input.expires_at);
      if (reserved.length !== outgoing.length) throw new AssetsReserved();
      const intent = toTradeIntent((await findTradeIntent(tx, meta.workspaceId, id))!);
      // The webhook payload is the record as answered (its `assets` with their images included), less reservations.
      const { reservations: _reservations, updated_at: _updated, ...payload } = intent;
      await insertAuditEvent(tx, {
        workspaceId: meta.workspaceId,
        source: 'gameplatform',
        eventType: 'trade_intent.created',
        resourceType: 'trade_intent',
        resourceId: id,
        outcome: 'succeeded',
        actor: meta.actor,
        requestId: meta.requestId,
        occurredAt: meta.now,
        metadata: {
          kind,
          account_id: intent.account_id,
          external_reference: intent.external_reference,
          give: intent.give,
          receive: intent.receive,
          target_trade_id: intent.target_trade_id,
        },
      });
      await insertOutboxEvent(tx, { type: 'trade_intent.created', workspaceId: meta.workspaceId, payload, at: meta.now });
      return intent;
    });
  } catch (error) {
    if (error instanceof AssetsReserved) throw await assetReservedConflict(sql, meta, account.steam_id, outgoing, sides.give.field);
    const constraint = uniqueViolationOn(error);
    if (constraint === 'trade_intents_reference_idx') {
      await recordRejection(sql, meta, 'trade_intents.create', 'external_reference_conflict', { external_reference: input.external_reference });
      throw conflict('external_reference_conflict', 'Another trade intent of this workspace has this external_reference.', [
        { field: 'body.external_reference', message: 'already used in this workspace' },
      ]);
    }
    if (constraint === 'trade_intents_target_idx') {
      await recordRejection(sql, meta, 'trade_intents.create', 'target_offer_conflict', { target_trade_id: input.target_trade_id });
      throw conflict('target_offer_conflict', 'The target offer already has an active acceptance.', [
        { field: 'body.target_trade_id', message: 'already accepted by another draft' },
      ]);
    }
    throw error;
  }
}

/** 409 asset_reserved naming each held asset and its holder (by id only within the workspace). */
async function assetReservedConflict(sql: Sql, meta: TradeIntentMeta, steamId: string, outgoing: readonly string[], field: string): Promise<ApiError> {
  const holders = await findReservationHolders(sql, steamId, outgoing);
  // Another workspace's intent id is not ours to show: only that it exists.
  const details: ErrorDetail[] = holders.map((holder) => ({
    field: field === 'body.give' ? `body.give[${outgoing.indexOf(holder.asset_id)}]` : field,
    message:
      holder.workspace_id === meta.workspaceId
        ? `asset ${holder.asset_id} is reserved by trade intent ${holder.intent_id}`
        : `asset ${holder.asset_id} is reserved by a trade intent of another workspace`,
  }));
  // The holder may have let go between our insert and this read: the conflict still happened.
  if (details.length === 0) details.push({ field, message: 'an asset was reserved by a concurrent draft; retry' });
  await recordRejection(sql, meta, 'trade_intents.create', 'asset_reserved', {
    asset_ids: holders.map((holder) => holder.asset_id),
    holding_intents: holders.filter((holder) => holder.workspace_id === meta.workspaceId).map((holder) => holder.intent_id),
  });
  return conflict('asset_reserved', 'An outgoing asset is already reserved by another draft.', details);
}

/** POST /v2/trade-intents/{id}/cancel: a draft becomes cancelled and releases its reservations. */
export async function cancelTradeIntent(sql: Sql, id: string, meta: TradeIntentMeta): Promise<TradeIntent> {
  const outcome = await sql.begin(async (tx) => {
    const ended = await cancelDraft(tx, meta.workspaceId, id, meta.now);
    if (!ended) return { intent: await findTradeIntent(tx, meta.workspaceId, id), cancelled: false };
    await recordEnded(tx, [ended], 'cancelled', meta.actor, meta.requestId, meta.now);
    return { intent: await findTradeIntent(tx, meta.workspaceId, id), cancelled: true };
  });
  if (!outcome.intent) throw errors.notFound('No trade intent with this id in your workspace.');
  if (outcome.cancelled) return toTradeIntent(outcome.intent);
  const state = outcome.intent.state === 'draft' ? 'expired' : outcome.intent.state;
  await recordRejection(sql, meta, 'trade_intents.cancel', 'intent_not_cancellable', { trade_intent_id: id, state });
  throw conflict('intent_not_cancellable', `Only a draft can be cancelled; this intent is ${state}.`, [
    { field: 'path.trade_intent_id', message: `state is ${state}` },
  ]);
}

/**
 * Called by the accounts engineer's disconnect, in its transaction: every draft of the account is
 * cancelled and its reservations released, each with a `trade_intent.cancelled` audit event.
 */
export async function cancelDraftsOfAccount(tx: Queryable, accountId: string | number, meta: TradeIntentMeta): Promise<string[]> {
  const ended = await cancelDraftsOfAccountRows(tx, accountId, meta.now);
  await recordEnded(tx, ended, 'cancelled', meta.actor, meta.requestId, meta.now, 'account_disconnected');
  return ended.map((intent) => intent.id);
}

/** The `trade_intents.expire` job: drafts past expires_at become expired, in batches, until none are due. */
export async function expireDueTradeIntents(sql: Sql, now: Date, batchSize = 500): Promise<number> {
  let total = 0;
  for (;;) {
    const ended = await sql.begin(async (tx) => {
      const batch = await expireDueDrafts(tx, now, batchSize);
      await recordEnded(tx, batch, 'expired', SYSTEM_ACTOR, null, now);
      return batch.length;
    });
    total += ended;
    if (ended < batchSize) return total;
  }
}
