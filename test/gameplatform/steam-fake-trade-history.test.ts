import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { parseTradeHistory } from '../../shared/gameplatform/trade-history.ts';
import { PARTNER_STEAM_ID, PUBLIC_STEAM_ID, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';

/**
 * The Steam fake's GetTradeHistory (docs/design.md §17): Steam's answer shape (read back by our own parser
 * without skipping anything), newest first, paging, include_failed, token checks, injected
 * failures, and the controls over HTTP that `npm start` uses.
 */

let fake: SteamFake;
const ACCOUNT = '76561198300000001';
beforeAll(async () => {
  fake = await startSteamFake();
});
afterAll(async () => {
  await fake.stop();
});

const history = (token: string, extra = '') =>
  fetch(`${fake.url}/IEconService/GetTradeHistory/v1/?access_token=${token}&max_trades=100&include_failed=true&get_descriptions=false${extra}`);

describe('GetTradeHistory in the fake', () => {
  test('both sides see the trade, newest first, with the return trade of a reversal', async () => {
    const given = fake.assetIds(PUBLIC_STEAM_ID).slice(0, 1);
    const recorded = fake.recordTrade(PUBLIC_STEAM_ID, { partner: PARTNER_STEAM_ID, give: given, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 1 }] });
    expect(fake.assetIds(PUBLIC_STEAM_ID)).not.toContain(given[0]!);
    const reversed = fake.reverseTrade(recorded.trade_id);
    expect(fake.assetIds(PUBLIC_STEAM_ID)).toContain(reversed.returned[0]!);

    const response = await history(fake.issueAccessToken(PUBLIC_STEAM_ID));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { response: { trades: Record<string, unknown>[]; more: boolean } };
    expect(body.response.more).toBe(false);
    expect(body.response.trades.map((trade) => [trade.tradeid, trade.status, trade.rollback_trade])).toEqual([
      [reversed.rollback_trade_id, 3, recorded.trade_id],
      [recorded.trade_id, 12, undefined],
    ]);
    expect(body.response.trades[1]!.assets_given).toEqual([
      expect.objectContaining({ appid: 730, contextid: '2', assetid: given[0], amount: '1', new_assetid: recorded.given[0]!.new_asset_id }),
    ]);
    const parsed = parseTradeHistory(body);
    expect(parsed.skipped).toEqual({ trades: 0, assets: 0 });

    // The partner's own history: the same trade, sides swapped, ids as its inventory had them.
    const partner = (await (await history(fake.issueAccessToken(PARTNER_STEAM_ID))).json()) as {
      response: { trades: { tradeid: string; steamid_other: string; assets_received?: { assetid: string }[] }[] };
    };
    const seen = partner.response.trades.find((trade) => trade.tradeid === recorded.trade_id)!;
    expect(seen.steamid_other).toBe(PUBLIC_STEAM_ID);
    expect(seen.assets_received![0]!.assetid).toBe(recorded.given[0]!.new_asset_id);
  });

  test('pages with start_after_time / start_after_tradeid and more; include_failed; settle', async () => {
    const at = (seconds: number) => new Date(1_786_000_000_000 + seconds * 1000);
    const ids = [0, 1, 2, 3, 4].map(
      (index) =>
        fake.recordTrade(ACCOUNT, { partner: PARTNER_STEAM_ID, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: index }], at: at(index) }).trade_id,
    );
    fake.settleTrade(ids[0]!, at(10));
    const token = fake.issueAccessToken(ACCOUNT);
    const page = async (extra: string) =>
      (
        (await (await fetch(`${fake.url}/IEconService/GetTradeHistory/v1/?access_token=${token}${extra}`)).json()) as {
          response: { trades: { tradeid: string; time_init: number; status: number; time_settlement?: number }[]; more: boolean };
        }
      ).response;
    const first = await page('&max_trades=2');
    expect(first.trades.map((trade) => trade.tradeid)).toEqual([ids[4]!, ids[3]!]);
    expect(first.more).toBe(true);
    const last = first.trades[1]!;
    const second = await page(`&max_trades=2&start_after_time=${last.time_init}&start_after_tradeid=${last.tradeid}`);
    expect(second.trades.map((trade) => trade.tradeid)).toEqual([ids[2]!, ids[1]!]);
    const third = await page(`&max_trades=2&start_after_time=${second.trades[1]!.time_init}&start_after_tradeid=${second.trades[1]!.tradeid}`);
    expect(third.trades.map((trade) => [trade.tradeid, trade.status, trade.time_settlement])).toEqual([[ids[0], 3, Math.floor(at(10).getTime() / 1000)]]);
    expect(third.more).toBe(false);
    const back = await page(
      `&max_trades=2&start_after_time=${second.trades[0]!.time_init}&start_after_tradeid=${second.trades[0]!.tradeid}&navigating_back=true`,
    );
    expect(back.trades.map((trade) => trade.tradeid)).toEqual([ids[4]!, ids[3]!]);
  });

  test('Steam refusals and injected failures', async () => {
    expect((await history('not-a-token')).status).toBe(401);
    const revoked = fake.issueAccessToken(ACCOUNT);
    fake.revokeAccessToken(revoked);
    expect((await history(revoked)).status).toBe(401);
    const token = fake.issueAccessToken(ACCOUNT);
    expect((await fetch(`${fake.url}/IEconService/GetTradeHistory/v1/?access_token=${token}`)).status).toBe(400);
    fake.failNext('trade_history', { status: 429, retryAfter: 7, steamId: ACCOUNT });
    const throttled = await history(token);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('7');
    expect((await history(token)).status).toBe(200);
    expect(fake.tradeHistoryRequests.slice(-2).map((request) => [request.steamId, request.status])).toEqual([
      [ACCOUNT, 429],
      [ACCOUNT, 200],
    ]);
  });

  test('controls over HTTP: record, reverse, list, fail', async () => {
    const steamId = '76561198300000002';
    const recorded = (await (
      await fetch(`${fake.url}/_control/trades`, {
        method: 'POST',
        body: JSON.stringify({ steam_id: steamId, partner: PARTNER_STEAM_ID, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 1 }] }),
      })
    ).json()) as { trade_id: string };
    const reversed = (await (await fetch(`${fake.url}/_control/trades/${recorded.trade_id}/reverse`, { method: 'POST' })).json()) as {
      rollback_trade_id: string;
    };
    expect(reversed.rollback_trade_id).toMatch(/^\d+$/);
    const again = await fetch(`${fake.url}/_control/trades/${recorded.trade_id}/reverse`, { method: 'POST', body: '{}' });
    expect(again.status).toBe(400);
    const listed = (await (await fetch(`${fake.url}/_control/trades/${steamId}`)).json()) as { trades: { tradeid: string; status: number }[] };
    expect(listed.trades.map((trade) => trade.status)).toEqual([3, 12]);
    expect((await fetch(`${fake.url}/_control/trades`, { method: 'POST', body: JSON.stringify({ fail: { status: 503, steam_id: steamId } }) })).status).toBe(
      200,
    );
    expect((await history(fake.issueAccessToken(steamId))).status).toBe(503);
  });
});
