/**
 * The market simulator as a process (`npm run simulator`): see runSimulatorFromEnv in
 * test/fakes/processes.ts for its settings. `npm start` runs it through test/fakes/main.ts.
 */
import { runSimulatorFromEnv, stopOnSignals } from './processes.ts';

stopOnSignals([await runSimulatorFromEnv()]);
