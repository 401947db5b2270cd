import type { KubeObject } from "../kube/client.ts";

/** The fields of a live apps/v1 Deployment the status rules read. */
export interface LiveDeployment extends KubeObject {
  spec?: { replicas?: number; template?: { metadata?: { labels?: Record<string, string> } } };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

interface ContainerStatus {
  name: string;
  restartCount?: number;
  state?: { waiting?: { reason?: string; message?: string }; terminated?: { exitCode?: number; reason?: string } };
  lastState?: { terminated?: { exitCode?: number; reason?: string; message?: string } };
}

export interface LivePod extends KubeObject {
  status?: {
    phase?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: ContainerStatus[];
    initContainerStatuses?: ContainerStatus[];
  };
}

export type Rollout =
  | { phase: "progressing"; reason: string; message: string }
  | { phase: "complete"; message: string }
  | { phase: "failed"; reason: string; message: string };

/**
 * kubectl's rollout-status rule: the controller has seen the latest spec, every replica runs the
 * new template, no old replica is left and all updated replicas are available.
 */
export function rolloutStatus(deployment: LiveDeployment): Rollout {
  const status = deployment.status ?? {};
  const desired = deployment.spec?.replicas ?? 1;
  const progressing = status.conditions?.find((c) => c.type === "Progressing");
  if ((status.observedGeneration ?? 0) < (deployment.metadata?.generation ?? 0)) {
    return {
      phase: "progressing",
      reason: "Deploying",
      message: "waiting for the deployment spec update to be observed",
    };
  }
  if (progressing?.status === "False" && progressing.reason === "ProgressDeadlineExceeded") {
    return {
      phase: "failed",
      reason: "ProgressDeadlineExceeded",
      message: progressing.message ?? "the rollout exceeded its progress deadline",
    };
  }
  const updated = status.updatedReplicas ?? 0;
  const replicas = status.replicas ?? 0;
  const available = status.availableReplicas ?? 0;
  if (updated < desired) {
    return {
      phase: "progressing",
      reason: "Deploying",
      message: `${updated} of ${desired} new replicas have been updated`,
    };
  }
  if (replicas > updated) {
    return {
      phase: "progressing",
      reason: "Deploying",
      message: `${replicas - updated} old replicas are pending termination`,
    };
  }
  if (available < updated) {
    return {
      phase: "progressing",
      reason: "Deploying",
      message: `${available} of ${updated} updated replicas are available`,
    };
  }
  return { phase: "complete", message: `${available} of ${desired} replicas available` };
}

const IMAGE_PULL_REASONS = new Set(["ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"]);

export interface PodFailure {
  /**
   * SpecRejected: the pod policy refused the spec, so no pod was ever rendered (see build/pod-policy.ts).
   * ObjectRejected: the API server refused an object the operator applied (422 Invalid, 400).
   * FailedCreate: admission refused the pods the Deployment's ReplicaSet creates (Pod Security, a ResourceQuota).
   */
  reason:
    | "ImagePullBackOff"
    | "CrashLoopBackOff"
    | "Unschedulable"
    | "SpecRejected"
    | "ObjectRejected"
    | "FailedCreate";
  message: string;
}

/** The first definite failure among the pods of a revision, read the way `kubectl describe` shows it. */
export function podFailure(pods: readonly LivePod[]): PodFailure | undefined {
  for (const pod of pods) {
    const name = pod.metadata?.name ?? "pod";
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const container of statuses) {
      const waiting = container.state?.waiting;
      if (waiting?.reason && IMAGE_PULL_REASONS.has(waiting.reason)) {
        return {
          reason: "ImagePullBackOff",
          message: `${name}: container ${container.name} cannot pull its image (${waiting.reason})${waiting.message ? `: ${waiting.message}` : ""}`,
        };
      }
      if (waiting?.reason === "CrashLoopBackOff") {
        const last = container.lastState?.terminated;
        const exit = last?.exitCode === undefined ? "" : ` with exit code ${last.exitCode}`;
        return {
          reason: "CrashLoopBackOff",
          message: `${name}: container ${container.name} keeps crashing${exit} (restarted ${container.restartCount ?? 0} times)`,
        };
      }
    }
    const scheduled = pod.status?.conditions?.find((c) => c.type === "PodScheduled");
    if (scheduled?.status === "False" && scheduled.reason === "Unschedulable") {
      return { reason: "Unschedulable", message: `${name}: ${scheduled.message ?? "no node can run the pod"}` };
    }
  }
  return undefined;
}

/**
 * The Deployment controller's copy of its ReplicaSet's `ReplicaFailure` condition: the API server refused
 * the pods (Pod Security admission, a ResourceQuota), which on a real cluster is reported nowhere else
 * but in Events, and would otherwise surface only as a progress-deadline overrun much later.
 */
export function replicaFailure(deployment: LiveDeployment | undefined): PodFailure | undefined {
  const failed = deployment?.status?.conditions?.find((c) => c.type === "ReplicaFailure" && c.status === "True");
  if (failed?.reason !== "FailedCreate") return undefined;
  const name = deployment?.metadata?.name ?? "the agent Deployment";
  return { reason: "FailedCreate", message: `Deployment ${name} cannot create pods: ${failed.message ?? ""}` };
}
