// Whether this process is live, as its liveness probe (GET /healthz) reports it. Most failures are recovered from
// in-process (a lost database connection is replaced, a crashed Kafka consumer restarted); a part that has stopped
// for good and will not come back by itself reports here, so that /healthz answers 503 and Kubernetes restarts
// the pod instead of leaving a process that looks up but does nothing. Process-wide, as a probe is.

const problems = new Map<object, string>();

/**
 * Marks the process not live because of `owner` (any object that stands for the broken part), with a reason an
 * operator reads in the probe's answer. The same owner reporting again replaces its reason.
 */
export function reportNotLive(owner: object, reason: string): void {
  problems.set(owner, reason);
}

/** `owner` is gone or working again (a consumer that was stopped on purpose): it no longer counts. */
export function clearNotLive(owner: object): void {
  problems.delete(owner);
}

/** Why the process is not live; empty while it is. */
export function livenessProblems(): string[] {
  return [...problems.values()];
}

/** The probe's answer while the process is not live, in the one error body. */
export function notLive(problems: readonly string[]) {
  return { detail: `Not live: ${problems.join('; ')}`, status_code: 503, type: 'service_unavailable' as const };
}
