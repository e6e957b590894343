import { Counter } from 'prom-client';
import { type AttemptResult, attemptDeliveries, attemptDelivery, type DeliveryDeps } from '../../shared/webhooks/deliver.ts';
import { deliveryBatchEnqueuer, deliveryEnqueuer, dispatchOutbox, sweepDeliveries } from '../../shared/webhooks/dispatch.ts';
import { pageLinksFromConfig } from '../../shared/webhooks/event-pages.ts';
import { SecretKeyring } from '../../shared/webhooks/secrets.ts';
import { nudgeOnNotify } from '../nudge.ts';
import { handle, type PoolDefinition } from '../pool.ts';

/**
 * docs/design.md §12: what each `webhooks.deliver` job came to. `succeeded`; `retry` (the attempt failed and
 * another is scheduled); `failed` (the last attempt failed, or the receiver answered 410);
 * `cancelled` (the endpoint is gone); `skipped` (not due, or another worker holds it).
 */
const deliveryOutcomes = new Counter({
  name: 'cs2_webhook_deliveries_total',
  help: 'Webhook delivery jobs by outcome: succeeded, retry, failed (final), cancelled (endpoint gone), skipped (not due or held elsewhere)',
  labelNames: ['outcome'] as const,
  registers: [],
});
// Every outcome from zero, so rates and ratios exist before the first delivery of each kind.
for (const outcome of ['succeeded', 'retry', 'failed', 'cancelled', 'skipped'] satisfies AttemptResult['kind'][]) deliveryOutcomes.inc({ outcome }, 0);

/**
 * docs/design.md §8 delivery: `webhooks.dispatch` fans outbox events out to delivery rows (every second and
 * on NOTIFY), `webhooks.deliver` makes one signed attempt and schedules the next, `webhooks.sweep`
 * recovers attempts of dead workers and deliveries whose job was lost.
 */
export const webhooksPool: PoolDefinition = {
  pool: 'webhooks',
  // Deliveries wait on receivers (up to WEBHOOK_TIMEOUT_MS each), not on this process's CPU.
  concurrency: 64,
  metrics: [deliveryOutcomes],
  schedules: [
    { id: 'webhooks-dispatch', job: 'webhooks.dispatch', everyMs: 1_000 },
    { id: 'webhooks-sweep', job: 'webhooks.sweep', everyMs: 5_000 },
  ],
  handlers: (context) => {
    const { config, sql, log, now, queue } = context;
    const deliveryDeps: DeliveryDeps = {
      sql,
      log,
      keyring: SecretKeyring.fromConfig(config),
      now,
      retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      pageLinks: pageLinksFromConfig(config),
    };
    const enqueueDeliveries = deliveryEnqueuer(queue);
    const enqueueBatches = deliveryBatchEnqueuer(queue);
    // The outbox trigger (sql/0006) notifies on every insert; the one-second schedule covers a missed one.
    const listen = nudgeOnNotify(context, log, { channel: 'event_outbox', job: 'webhooks.dispatch', jobId: 'dispatch-nudge' });
    return [
      handle('webhooks.dispatch', async () => {
        listen();
        const dispatched = await dispatchOutbox(sql, now, enqueueBatches, { firstDelayMs: config.WEBHOOK_RETRY_DELAYS_MS[0] });
        if (dispatched.events > 0) log.debug(dispatched, 'outbox dispatched');
        return dispatched;
      }),
      handle('webhooks.deliver', async ({ delivery_id }) => {
        const result = await attemptDelivery(deliveryDeps, delivery_id);
        deliveryOutcomes.inc({ outcome: result.kind });
        if (result.kind === 'retry') await enqueueDeliveries([{ deliveryId: delivery_id, attemptsMade: result.attempt, delayMs: result.delayMs }]);
        return result;
      }),
      handle('webhooks.deliver_batch', async ({ delivery_ids }) => {
        const results = await attemptDeliveries(deliveryDeps, delivery_ids);
        for (const result of results) deliveryOutcomes.inc({ outcome: result.kind });
        const retries = delivery_ids.flatMap((deliveryId, index) => {
          const result = results[index]!;
          return result.kind === 'retry' ? [{ deliveryId, attemptsMade: result.attempt, delayMs: result.delayMs }] : [];
        });
        if (retries.length > 0) await enqueueDeliveries(retries);
        return { attempted: results.length, retries: retries.length };
      }),
      handle('webhooks.sweep', async () => {
        listen();
        const swept = await sweepDeliveries(sql, now(), config.WEBHOOK_RETRY_DELAYS_MS.length, enqueueDeliveries);
        if (swept.reclaimed + swept.requeued + swept.expired + swept.previousSecretsDropped > 0) log.info(swept, 'webhook deliveries swept');
        return swept;
      }),
    ];
  },
};
