import type { KubeObject } from "../kube/client.ts";
import type { LiveDeployment, LivePod } from "../status/rollout.ts";
import type { LiveStatefulSet } from "./caches.ts";

/**
 * What the caches keep of each child kind: only the fields the reconciler reads, so a thousand
 * deployments' pods and pod templates do not sit in memory (controller-runtime's cache transforms).
 */
function metadata(obj: KubeObject): KubeObject["metadata"] {
  const m = obj.metadata ?? {};
  return {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    labels: m.labels,
    annotations: m.annotations,
    ownerReferences: m.ownerReferences,
    deletionTimestamp: m.deletionTimestamp,
  };
}

export function trimDeployment(d: LiveDeployment): LiveDeployment {
  return {
    metadata: metadata(d),
    spec: { replicas: d.spec?.replicas, template: { metadata: { labels: d.spec?.template?.metadata?.labels } } },
    status: d.status,
  };
}

export function trimPod(pod: LivePod): LivePod {
  const status = pod.status;
  return {
    metadata: metadata(pod),
    status: {
      phase: status?.phase,
      conditions: status?.conditions,
      containerStatuses: status?.containerStatuses,
      initContainerStatuses: status?.initContainerStatuses,
    },
  };
}

/**
 * The Redis StatefulSet: also each claim template's storage class and size, which Kubernetes never
 * lets change, so the reconciler can keep what was created instead of sending a refused update.
 */
export function trimStatefulSet(sts: LiveStatefulSet): LiveStatefulSet {
  const templates = sts.spec?.volumeClaimTemplates?.map((claim) => ({
    metadata: { name: claim.metadata?.name },
    spec: {
      ...(claim.spec?.storageClassName === undefined ? {} : { storageClassName: claim.spec.storageClassName }),
      resources: { requests: { storage: claim.spec?.resources?.requests?.storage } },
    },
  }));
  return {
    metadata: metadata(sts),
    ...(templates ? { spec: { volumeClaimTemplates: templates } } : {}),
    status: sts.status,
  };
}

/** Services, autoscalers, NetworkPolicies: identity, labels, the hash annotation and status. */
export function trimToStatus<T extends KubeObject & { status?: unknown }>(obj: T): T {
  return { metadata: metadata(obj), status: obj.status } as T;
}
