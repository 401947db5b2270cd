import type { Condition } from "@agentplane/crds";

export type { Condition };

export type ConditionUpdate = Omit<Condition, "lastTransitionTime">;

/** metav1.Time has second precision; comparing unrounded times would cause endless status writes. */
export function toKubeTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/**
 * Sets conditions by type like controller-runtime's SetStatusCondition: `lastTransitionTime` moves
 * only when `status` changes; reason, message and observedGeneration update in place.
 */
export function setConditions(
  current: readonly Condition[] | undefined,
  updates: readonly ConditionUpdate[],
  now: Date,
): Condition[] {
  const result = [...(current ?? [])];
  for (const update of updates) {
    const index = result.findIndex((c) => c.type === update.type);
    const existing = index >= 0 ? result[index] : undefined;
    const lastTransitionTime =
      existing && existing.status === update.status ? existing.lastTransitionTime : toKubeTime(now);
    const next = { ...update, lastTransitionTime };
    if (index >= 0) result[index] = next;
    else result.push(next);
  }
  return result;
}
