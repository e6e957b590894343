// Operator CLI: `npm run admin -- <command> [options]`. Run without arguments for help.
import { parseArgs } from 'node:util';
import { rewrapSteamTokens } from '../shared/gameplatform/steam-token.ts';
import { isScope, type Scope } from '../shared/http/scopes.ts';
import { adminCreateAccount, adminCreateKey, adminCreateWorkspace, adminRevokeKey, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { KEY_INVALIDATION_CHANNEL } from '../shared/identity/key-cache.ts';
import { TIERS, type Tier } from '../shared/identity/workspaces.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createSql } from '../shared/platform/db.ts';
import { createRequestRedis } from '../shared/platform/redis.ts';
import { SecretKeyring } from '../shared/webhooks/secrets.ts';
import { rewrapWebhookSecrets } from '../shared/webhooks/service.ts';

const help = `usage: npm run admin -- <command> [options]

  create-workspace --name NAME [--tier free|pro|enterprise]
  create-account   --workspace ID --email EMAIL --password PASSWORD
  create-key       --workspace ID [--label LABEL] [--scopes a:read,b:read]
  set-tier         --workspace ID --tier free|pro|enterprise
  set-budgets      --workspace ID [--minute N|default] [--day N|default]
  suspend          --workspace ID
  unsuspend        --workspace ID
  revoke-key       --key ID
  rewrap-webhook-secrets   re-encrypt every webhook signing secret and Steam owner token under the current WEBHOOK_SECRET_KEY
                           (after a rotation: new key in WEBHOOK_SECRET_KEY, old ones in WEBHOOK_SECRET_KEYS_PREVIOUS)

Every command prints JSON and records an audit event in the workspace.`;

const { positionals, values } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
    name: { type: 'string' },
    tier: { type: 'string' },
    workspace: { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    label: { type: 'string' },
    scopes: { type: 'string' },
    minute: { type: 'string' },
    day: { type: 'string' },
    key: { type: 'string' },
  },
});

function fail(message: string): never {
  process.stderr.write(`${message}\n\n${help}\n`);
  process.exit(2);
}

function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value.length === 0) fail(`--${name} is required`);
  return value;
}

function tier(value: string): Tier {
  if (!(TIERS as readonly string[]).includes(value)) fail(`--tier must be one of ${TIERS.join(', ')}`);
  return value as Tier;
}

function budget(value: string | undefined): number | null {
  if (value === undefined || value === 'default') return null;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) fail(`budgets are positive integers or "default", not ${value}`);
  return parsed;
}

const command = positionals[0];
if (!command || command === 'help') {
  process.stdout.write(`${help}\n`);
  process.exit(command ? 0 : 2);
}

const config = loadConfigOrExit();
const sql = createSql(config.DATABASE_URL, { max: 2, application: 'admin' });
const redis = createRequestRedis(config.REDIS_URL, 'admin');
redis.on('error', () => undefined);

/** Tells running API processes to drop cached key lookups (they expire within seconds anyway). */
async function announce(keyHashes: string[]) {
  for (const hash of keyHashes) await redis.publish(KEY_INVALIDATION_CHANNEL, hash).catch(() => undefined);
}

async function run(): Promise<unknown> {
  switch (command) {
    case 'create-workspace':
      return adminCreateWorkspace(sql, { name: required('name'), tier: tier(values.tier ?? 'free') });
    case 'create-account':
      return adminCreateAccount(sql, { workspaceId: required('workspace'), email: required('email'), password: required('password') });
    case 'create-key': {
      const scopes = values.scopes?.split(',').map((scope) => scope.trim());
      const unknown = scopes?.filter((scope) => !isScope(scope));
      if (unknown?.length) fail(`unknown scopes: ${unknown.join(', ')}`);
      const key = await adminCreateKey(sql, { workspaceId: required('workspace'), label: values.label ?? 'admin', scopes: scopes as Scope[] | undefined });
      return { ...key, note: 'the raw key is shown only now' };
    }
    case 'set-tier':
    case 'set-budgets':
    case 'suspend':
    case 'unsuspend': {
      const workspaceId = required('workspace');
      const change =
        command === 'set-tier'
          ? { tier: tier(required('tier')) }
          : command === 'set-budgets'
            ? { budgets: { minute: budget(values.minute), day: budget(values.day) } }
            : { suspended: command === 'suspend' };
      const hashes = await adminUpdateWorkspace(sql, workspaceId, change);
      if (!hashes) fail(`no workspace ${workspaceId}`);
      await announce(hashes);
      return { workspace_id: workspaceId, ...change };
    }
    case 'revoke-key': {
      const keyId = required('key');
      const hash = await adminRevokeKey(sql, keyId);
      if (!hash) fail(`no live key ${keyId}`);
      await announce([hash]);
      return { key_id: keyId, revoked: true };
    }
    case 'rewrap-webhook-secrets': {
      const keyring = SecretKeyring.fromConfig(config);
      const actor = { type: 'admin' as const, id: process.env.USER ?? 'cli' };
      const report = await rewrapWebhookSecrets(sql, keyring, actor);
      // Steam owner tokens (docs/design.md §17) are sealed under the same keys: rewrapped too, so the old key can go.
      const steamTokens = await rewrapSteamTokens(sql, keyring, actor);
      // Secrets under a key that is not configured stay as they are; the operator must restore that key.
      if (report.unreadable.length > 0 || steamTokens.unreadable.length > 0) process.exitCode = 1;
      return { ...report, steam_tokens: steamTokens };
    }
    default:
      fail(`unknown command ${command}`);
  }
}

try {
  process.stdout.write(`${JSON.stringify(await run(), null, 2)}\n`);
} catch (error) {
  process.stderr.write(`admin: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  redis.disconnect();
  await sql.end({ timeout: 5 });
}
