import { describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { FAKES_SCRIPT, localUpstreamsPlan } from '../../scripts/local-upstreams.ts';
import { argumentsOf, mergeEntries, mergeWorkerEntries, parseProcfile, readProcfile } from '../../scripts/procfile.ts';
import { POOLS } from '../../shared/jobs/queues.ts';

describe('npm start and the Procfile', () => {
  test('the Procfile runs one process per pool, and npm start merges them into one worker process in Procfile order', () => {
    const entries = readProcfile(join(import.meta.dir, '..', '..')).filter((entry) => entry.name !== 'release');
    const pools = entries.filter((entry) => entry.command.startsWith('bun workers/main.ts ')).map((entry) => entry.command.split(' ').slice(2));
    expect(pools.every((names) => names.length === 1)).toBe(true);
    expect(pools.flat().sort()).toEqual([...POOLS].sort());

    const merged = mergeWorkerEntries(entries);
    expect(merged.map((entry) => entry.name)).toEqual(['api', 'workers']);
    expect(merged[1]!.command).toBe(`bun workers/main.ts ${pools.flat().join(' ')}`);
  });

  test('entries other than worker pools are kept where they stand; a single pool is left alone', () => {
    const entries = parseProcfile(
      'web: bun api/main.ts\nemail: bun workers/main.ts exports\n# comment\n\nclock: bun scripts/clock.ts\nhooks: bun workers/main.ts webhooks index\n',
    );
    expect(mergeWorkerEntries(entries)).toEqual([
      { name: 'web', command: 'bun api/main.ts' },
      { name: 'workers', command: 'bun workers/main.ts exports webhooks index' },
      { name: 'clock', command: 'bun scripts/clock.ts' },
    ]);
    const single = parseProcfile('api: bun api/main.ts\ningest: bun workers/main.ts ingest\n');
    expect(mergeWorkerEntries(single)).toEqual(single);
    expect(() => parseProcfile('not a procfile line')).toThrow(/cannot parse/);
  });

  test('the local fakes npm start needs run in one process: test/fakes/main.ts with each fake named', async () => {
    let port = 41_000;
    const plan = await localUpstreamsPlan({})(async () => port++);
    expect(plan.entries.map((entry) => argumentsOf(entry, FAKES_SCRIPT))).toEqual([['simulator'], ['steam-fake'], ['image-fake']]);
    const merged = mergeEntries(plan.entries, FAKES_SCRIPT, 'fakes');
    expect(merged).toEqual([{ name: 'fakes', command: `bun ${FAKES_SCRIPT} simulator steam-fake image-fake` }]);
    // With SOURCES set, the simulator still serves the exchange rates unless FX_URL is set too.
    const fxOnly = await localUpstreamsPlan({ SOURCES: 'skinport' })(async () => port++);
    expect(mergeEntries(fxOnly.entries, FAKES_SCRIPT, 'fakes')).toEqual([{ name: 'fakes', command: `bun ${FAKES_SCRIPT} simulator steam-fake image-fake` }]);
    const steamOnly = await localUpstreamsPlan({ SOURCES: 'skinport', FX_URL: 'https://www.ecb.europa.eu' })(async () => port++);
    expect(mergeEntries(steamOnly.entries, FAKES_SCRIPT, 'fakes')).toEqual([{ name: 'fakes', command: `bun ${FAKES_SCRIPT} steam-fake image-fake` }]);
    // Image hosts set: no image fake.
    const imagesSet = await localUpstreamsPlan({
      SOURCES: 'skinport',
      FX_URL: 'https://www.ecb.europa.eu',
      STEAM_IMAGE_URL: 'https://images.example',
      ITEM_ASSETS_URL: 'https://assets.example',
    })(async () => port++);
    expect(mergeEntries(imagesSet.entries, FAKES_SCRIPT, 'fakes')).toEqual([{ name: 'steam-fake', command: `bun ${FAKES_SCRIPT} steam-fake` }]);
  });
});
