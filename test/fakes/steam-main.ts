/**
 * The Steam fake as a process (`npm run steam-fake`): see runSteamFakeFromEnv in
 * test/fakes/processes.ts for its settings. `npm start` runs it through test/fakes/main.ts.
 */
import { runSteamFakeFromEnv, stopOnSignals } from './processes.ts';

stopOnSignals([await runSteamFakeFromEnv()]);
