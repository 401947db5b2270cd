import { randomBytes } from "node:crypto";
import { KubeApiError, type KubeClient, type KubeObject } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { recordWarning } from "./workload-events.ts";

/** The ReplicaSet and Deployment controllers' parts of the test kubelet that need no process. */

const FIELD_MANAGER = "test-kubelet";

interface Condition {
  type: string;
  status: string;
  reason: string;
  message?: string;
}

export function controllerRef(owner: KubeObject) {
  return {
    apiVersion: owner.apiVersion as string,
    kind: owner.kind as string,
    name: owner.metadata?.name as string,
    uid: owner.metadata?.uid as string,
    controller: true,
    blockOwnerDeletion: true,
  };
}

/**
 * Creates up to `count` pods of the ReplicaSet's template (generated names, as the controller does);
 * stops at the first one admission refuses (Pod Security, a ResourceQuota) and returns its message.
 */
export async function createPods(
  kube: KubeClient,
  replicaSet: KubeObject & { spec?: { template?: { metadata?: { labels?: Record<string, string> }; spec?: object } } },
  count: number,
  nodeName: string,
): Promise<{ pods: KubeObject[]; failure?: string }> {
  const namespace = replicaSet.metadata?.namespace as string;
  const template = replicaSet.spec?.template ?? {};
  const pods: KubeObject[] = [];
  for (let i = 0; i < count; i++) {
    try {
      const pod = await kube.create<KubeObject>(resourcePath(resources.pod, namespace), {
        apiVersion: "v1",
        kind: "Pod",
        metadata: {
          name: `${replicaSet.metadata?.name}-${randomBytes(3).toString("hex")}`,
          namespace,
          labels: template.metadata?.labels,
          ownerReferences: [controllerRef(replicaSet)],
        },
        spec: { ...template.spec, nodeName },
      });
      pods.push(pod);
    } catch (error) {
      if (!(error instanceof KubeApiError)) throw error;
      return { pods, failure: error.message };
    }
  }
  return { pods };
}

/**
 * The ReplicaSet controller's report of pods it could not create: a `ReplicaFailure` condition
 * (reason `FailedCreate`, the API server's message, kept as first set while creates keep failing)
 * and a Warning Event when it is set. Returns the condition the Deployment controller copies.
 */
export async function reportReplicaFailure(
  kube: KubeClient,
  replicaSet: KubeObject & { status?: { conditions?: Condition[] } },
  failure: string | undefined,
): Promise<Condition | undefined> {
  const existing = replicaSet.status?.conditions?.find((c) => c.type === "ReplicaFailure");
  if (Boolean(existing) === Boolean(failure)) return existing;
  const condition = failure
    ? { type: "ReplicaFailure", status: "True", reason: "FailedCreate", message: failure }
    : undefined;
  const path = `${resourcePath(resources.replicaSet, replicaSet.metadata?.namespace, replicaSet.metadata?.name)}/status`;
  await kube.mergePatch(path, { status: { conditions: condition ? [condition] : null } }, FIELD_MANAGER);
  if (failure)
    await recordWarning(kube, replicaSet, "FailedCreate", `Error creating: ${failure}`, "replicaset-controller");
  return condition;
}

export interface RolloutCounts {
  generation: number | undefined;
  replicaSet: string;
  /** spec.replicas */
  want: number;
  /** Pods of the current template, and of older ones still running. */
  current: number;
  old: number;
  ready: number;
  /** The rollout has run past its progressDeadlineSeconds. */
  timedOut: boolean;
  replicaFailure: Condition | undefined;
}

/** The Deployment controller's status for the counts (its conditions' reasons and wording). */
export function deploymentStatus(counts: RolloutCounts) {
  const { want, current, old, ready, replicaSet } = counts;
  const complete = current >= want && ready >= want && old === 0;
  const progressing = complete
    ? {
        status: "True",
        reason: "NewReplicaSetAvailable",
        message: `ReplicaSet "${replicaSet}" has successfully progressed.`,
      }
    : counts.timedOut
      ? {
          status: "False",
          reason: "ProgressDeadlineExceeded",
          message: `ReplicaSet "${replicaSet}" has timed out progressing.`,
        }
      : { status: "True", reason: "ReplicaSetUpdated", message: `ReplicaSet "${replicaSet}" is progressing.` };
  return {
    observedGeneration: counts.generation,
    replicas: current + old,
    updatedReplicas: current,
    readyReplicas: ready,
    availableReplicas: ready,
    unavailableReplicas: Math.max(0, want - ready),
    conditions: [
      {
        type: "Available",
        status: ready >= want ? "True" : "False",
        reason: ready >= want ? "MinimumReplicasAvailable" : "MinimumReplicasUnavailable",
      },
      { type: "Progressing", ...progressing },
      // The Deployment controller copies its ReplicaSet's failure condition.
      ...(counts.replicaFailure ? [counts.replicaFailure] : []),
    ],
  };
}
