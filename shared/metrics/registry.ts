import { collectDefaultMetrics, Registry } from 'prom-client';

export { Registry };

/**
 * CPU, memory, event-loop lag, handles and heap of this process (prom-client's default metrics,
 * under their usual `process_*` / `nodejs_*` names). Once per process, from its entry point: they
 * describe the process, not an app, and each call starts its own event-loop sampler.
 */
export function collectProcessMetrics(registry: Registry): void {
  // The event-loop delay histogram samples every 100 ms, not prom-client's default 10 ms: at 10 ms
  // the sampler alone cost an idle process ~0.6 % of a core (bench:idle); 100 ms still catches any
  // stall worth alerting on.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
}
