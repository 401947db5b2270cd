import { type LivePod, podFailure } from "./rollout.ts";

/** The fields of the live managed-Redis StatefulSet the status rules read. */
export interface LiveRedisStatefulSet {
  metadata?: { name?: string; generation?: number; uid?: string };
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
 * cluster is almost always a ResourceQuota, LimitRange or Pod Security admission refusing it.
 * `failedCreate` is the message of the StatefulSet's latest `FailedCreate` Event, which says which:
 * with it, the problem is definite (waiting does not create the pod; raising the quota does, and the
 * revision then still becomes DEPLOYED).
 */
export function redisProblem(
  sts: LiveRedisStatefulSet | undefined,
  pods: readonly LivePod[],
  failedCreate?: string,
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
    if (failedCreate) return { reason: "PodNotCreated", message: failedCreate, definite: true };
    return {
      reason: "PodNotCreated",
      message: `StatefulSet ${name} could not create its pod (a ResourceQuota or LimitRange?): see kubectl describe statefulset ${name}`,
      definite: false,
    };
  }
  return undefined;
}
