// Usage: bun test/fakes/main.ts <simulator|steam-fake> [...]   (npm start: the fakes it needs, in one process)
import { FAKES, type FakeName, stopOnSignals } from './processes.ts';

const names = process.argv.slice(2);
const unknown = names.filter((name) => !(name in FAKES));
if (names.length === 0 || unknown.length > 0) {
  process.stderr.write(`usage: bun test/fakes/main.ts <${Object.keys(FAKES).join('|')}>…${unknown.length > 0 ? ` (unknown: ${unknown.join(', ')})` : ''}\n`);
  process.exit(2);
}
stopOnSignals(await Promise.all(names.map((name) => FAKES[name as FakeName]())));
