import type { Config } from '../platform/config.ts';
import { SOURCE_NAMES, type SourceName } from '../platform/source-names.ts';
import { type RequestBudgetSettings, sourceBudgetPrefix } from './budget.ts';
import { ADAPTERS } from './index.ts';
import type { SourceAdapter } from './types.ts';

export type SourceSettings = {
  name: SourceName;
  baseUrl: string;
  intervalSeconds: number;
  staleAfterSeconds: number;
  /** The source's request budget, its Redis keys under QUEUE_PREFIX (shared by one deployment's workers only). */
  budget: RequestBudgetSettings;
  /** Names read per run by per-item sources (steam's priceoverview). */
  batchSize: number;
  /**
   * Listing pages per run (csfloat: the real API allows 50 per page; the simulator 1000), or search
   * pages per run (steam: 100 rows each, real or local).
   */
  paging: { pageSize?: number; maxPages?: number };
  /** Whether the interval is the local default (a simulator URL, no interval configured). */
  localDefaultInterval: boolean;
};

// Against a local simulator prices move within a minute (docs/design.md §4) through the per-item source (steam,
// a slice of the market's search pages every 30 s); sources whose run reads the whole market (one body, or every listing
// page) keep a real upstream's pace (docs/performance.md "bench:idle"). Real upstreams get their own pace.
const LOCAL_INTERVAL_SECONDS = 30;
const LOCAL_BULK_INTERVAL_SECONDS = 300;
/**
 * Against a local simulator the keyless list is rebuilt at most once a minute (the pace the real
 * upstreams' defaults give it: steam's 60 s is their shortest), though steam runs every 30 s: a
 * nine-source build costs ~1.4 s of CPU and ~0.5 s of Postgres, the largest part of the idle cost.
 */
const LOCAL_SNAPSHOT_MIN_INTERVAL_SECONDS = 60;
/**
 * Steam's search pages per run against a local simulator (100 names each): 4 000 names every 30 s, so
 * the whole ~38 000-name catalog about every 5 minutes, the pace of the local bulk sources (each page
 * read is a price written or confirmed); a test catalog of up to 4 000 names is covered by one run.
 */
const LOCAL_STEAM_SEARCH_PAGES = 40;

function isLocal(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host === '::1' || host === '[::1]' || host.startsWith('127.');
}

export function isKnownSource(name: string): name is SourceName {
  return (SOURCE_NAMES as readonly string[]).includes(name);
}

/** The upstreams that take a key, and where it comes from (sent by the adapter, never logged). */
const API_KEYS: Partial<Record<SourceName, (config: Config) => string | undefined>> = {
  csfloat: (config) => config.SOURCE_CSFLOAT_API_KEY,
  waxpeer: (config) => config.SOURCE_WAXPEER_KEY,
  skinbaron: (config) => config.SOURCE_SKINBARON_KEY,
};

/** A source's key, when it takes one and one is configured. */
export function sourceApiKey(config: Config, name: SourceName): string | undefined {
  return API_KEYS[name]?.(config);
}

/**
 * Why a source SOURCES names cannot run: today only a missing required key (docs/design.md §14: skinbaron
 * without SOURCE_SKINBARON_KEY). Null when it can, or when it is not a known source (the ingest pool
 * refuses to boot on those).
 */
export function unavailableReason(config: Config, name: string): string | null {
  if (!isKnownSource(name)) return null;
  const required = ADAPTERS[name].requiredKey;
  if (required && config[required] === undefined) return `${required} is not set: ${name} needs a key (docs/design.md §14), so it is not enabled`;
  return null;
}

/**
 * The enabled sources: those SOURCES names that can run (unavailableReason null), in SOURCES order.
 * Everything that schedules, watches or reports sources (the ingest pool, GET /health, metrics, the
 * keyless list's snapshot pace) uses this list, never SOURCES itself.
 */
export function enabledSources(config: Config): string[] {
  return config.SOURCES.filter((name) => unavailableReason(config, name) === null);
}

/** Sources SOURCES names that cannot run, with the reason (GET /v2/status lists them as `unavailable`). */
export function unavailableSources(config: Config): { name: string; reason: string }[] {
  return config.SOURCES.flatMap((name) => {
    const reason = unavailableReason(config, name);
    return reason === null ? [] : [{ name, reason }];
  });
}

/** Interval, stale threshold and request budget of one source, from config and its adapter. */
export function sourceSettings(config: Config, adapter: SourceAdapter): SourceSettings {
  const upper = adapter.name.toUpperCase() as Uppercase<SourceName>;
  const baseUrl = config[`SOURCE_${upper}_URL`];
  const local = isLocal(baseUrl);
  // A bulk source's run reads and compares the whole market (~20 000-40 000 rows) and is followed by a
  // market index calculation, and any changed price costs a keyless snapshot build (~244 000 prices
  // with nine sources): at 30 s, the eight bulk sources cost about three quarters of a core at idle.
  const localInterval = adapter.needsNames ? LOCAL_INTERVAL_SECONDS : LOCAL_BULK_INTERVAL_SECONDS;
  const configured = config[`SOURCE_${upper}_INTERVAL_SECONDS`] ?? config.INGEST_INTERVAL_SECONDS;
  const intervalSeconds = configured ?? (local ? localInterval : adapter.defaultIntervalSeconds);
  // A simulator has no real budget to protect; keep a generous one so the code path still runs.
  const limits = local ? { requests: Math.max(adapter.defaultBudget.requests * 50, 1_000), windowSeconds: 60 } : adapter.defaultBudget;
  const budget = { ...limits, keyPrefix: sourceBudgetPrefix(config.QUEUE_PREFIX) };
  return {
    name: adapter.name,
    baseUrl,
    intervalSeconds,
    staleAfterSeconds: config[`SOURCE_${upper}_STALE_SECONDS`] ?? Math.max(3 * intervalSeconds, 90),
    budget,
    ...requestsPerRun(adapter, budget, intervalSeconds, local),
    localDefaultInterval: configured === undefined && local,
  };
}

/**
 * A run's requests. Per-item sources use at most ~80 % of what their budget allows per interval, so
 * consecutive runs never find the sliding window still full; a source that also reads pages (steam,
 * SourceAdapter.searchShare) spends that share on pages (locally at most LOCAL_STEAM_SEARCH_PAGES)
 * and the rest on names, never more than the ~80 % together.
 */
function requestsPerRun(
  adapter: SourceAdapter,
  budget: { requests: number; windowSeconds: number },
  intervalSeconds: number,
  local: boolean,
): Pick<SourceSettings, 'batchSize' | 'paging'> {
  const perRun = Math.max(1, Math.floor((0.8 * budget.requests * Math.min(intervalSeconds, budget.windowSeconds)) / budget.windowSeconds / (local ? 2 : 1)));
  if (adapter.searchShare === undefined) return { batchSize: perRun, paging: local ? { pageSize: 1000, maxPages: 60 } : {} };
  const pages = Math.max(1, Math.floor(perRun * adapter.searchShare));
  return { batchSize: Math.max(0, perRun - pages), paging: { maxPages: local ? Math.min(pages, LOCAL_STEAM_SEARCH_PAGES) : pages } };
}

/**
 * How often the keyless price snapshot may be rebuilt: PRICE_SNAPSHOT_INTERVAL_SECONDS, else the
 * shortest interval of the enabled sources (every run's changes reach the list within one interval),
 * counting a local default interval as at least LOCAL_SNAPSHOT_MIN_INTERVAL_SECONDS.
 */
export function snapshotIntervalSeconds(config: Config): number {
  if (config.PRICE_SNAPSHOT_INTERVAL_SECONDS !== undefined) return config.PRICE_SNAPSHOT_INTERVAL_SECONDS;
  const intervals = enabledSources(config)
    .filter(isKnownSource)
    .map((name) => {
      const settings = sourceSettings(config, ADAPTERS[name]);
      return settings.localDefaultInterval ? Math.max(settings.intervalSeconds, LOCAL_SNAPSHOT_MIN_INTERVAL_SECONDS) : settings.intervalSeconds;
    });
  return intervals.length > 0 ? Math.min(...intervals) : LOCAL_INTERVAL_SECONDS;
}
