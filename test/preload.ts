/**
 * Preloaded into every `bun test` process by `npm test` (scripts/dev.ts passes `--preload`); a plain
 * `bun test` works without it, only slower.
 *
 * Password hashing, done once per input: argon2id at the cost the code asks for (64 MiB, two passes)
 * takes 0.3–0.5 s of a core on a 2-core machine per hash or verification, and the suites sign up over
 * 600 accounts, nearly all with one password (helpers.ts TEST_PASSWORD): minutes of CPU. So in the
 * test process Bun.password.hash is memoised by password and options, and Bun.password.verify by
 * password and hash. Every stored hash is still one Bun made with exactly the options the code asks
 * for, and every verification's answer is the one Bun gave for that password and hash. Only the salt
 * repeats between accounts of one test process that share a password, which no suite compares.
 * Processes a suite spawns (the API, workers, `npm start`) hash as deployed.
 */
const hash = Bun.password.hash.bind(Bun.password);
const verify = Bun.password.verify.bind(Bun.password);

/** `compute(key)` once per key; a failure is not kept, so the next call computes again. */
function once<T>(): (key: string, compute: () => Promise<T>) => Promise<T> {
  const results = new Map<string, Promise<T>>();
  return (key, compute) => {
    let result = results.get(key);
    if (!result) {
      result = compute();
      results.set(key, result);
      result.catch(() => results.delete(key));
    }
    return result;
  };
}

const hashed = once<string>();
const verified = once<boolean>();

Bun.password.hash = (password, options) =>
  typeof password === 'string' ? hashed(JSON.stringify([password, options ?? null]), () => hash(password, options)) : hash(password, options);

Bun.password.verify = (password, digest, algorithm) =>
  typeof password === 'string' && typeof digest === 'string'
    ? verified(JSON.stringify([password, digest, algorithm ?? null]), () => verify(password, digest, algorithm))
    : verify(password, digest, algorithm);
