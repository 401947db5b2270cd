import { type LivePod, podFailure } from "./rollout.ts";

/** The fields of the live managed-Redis StatefulSet the status rules read. */
export interface LiveRedisStatefulSet {
  metadata?: { name?: string; generation?: number };
  status?: { observedGeneration?: number; replicas?: number; readyReplicas?: number };
}

export interface RedisProblem {
  reason: "CrashLoopBackOff" | "ImagePullBackOff" | "Unschedulable" | "PodNotCreated";
  message: string;
  /**
   * True when waiting cannot help (the container crashes or its image cannot be pulled): the revision
   * rolling out then fails with it. An unschedulable pod or one not created may still come (a volume
   * being provisioned, a quota raised), so those are only reported.
   */
  definite: boolean;
}

/**
 * Why the managed Redis is not ready, read from its pod the way agent pods are, or from a StatefulSet
 * that has seen its spec and still has no pod: its controller could not create one, which on a real
 * cluster is almost always a ResourceQuota or LimitRange refusing it (only the StatefulSet's events,
 * which the operator does not read, say which).
 */
export function redisProblem(
  sts: LiveRedisStatefulSet | undefined,
  pods: readonly LivePod[],
): RedisProblem | undefined {
  if (!sts || (sts.status?.readyReplicas ?? 0) >= 1) return undefined;
  const failure = podFailure(pods);
  if (failure?.reason === "CrashLoopBackOff" || failure?.reason === "ImagePullBackOff") {
    return { reason: failure.reason, message: failure.message, definite: true };
  }
  if (failure?.reason === "Unschedulable") return { reason: failure.reason, message: failure.message, definite: false };
  const observed = (sts.status?.observedGeneration ?? 0) >= (sts.metadata?.generation ?? 1);
  if (pods.length === 0 && observed && (sts.status?.replicas ?? 0) === 0) {
    const name = sts.metadata?.name ?? "the Redis StatefulSet";
    return {
      reason: "PodNotCreated",
      message: `StatefulSet ${name} could not create its pod (a ResourceQuota or LimitRange?): see kubectl describe statefulset ${name}`,
      definite: false,
    };
  }
  return undefined;
}
