import { isConflict, KubeApiError, type KubeClient, type KubeObject } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import type { PodSpec } from "./pod-env.ts";
import { recordWarning } from "./workload-events.ts";

export interface StatefulSet extends KubeObject {
  spec: {
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
    volumeClaimTemplates?: { metadata?: { name?: string; labels?: Record<string, string> }; spec?: unknown }[];
  };
  status?: { readyReplicas?: number; replicas?: number; observedGeneration?: number };
}

const FIELD_MANAGER = "test-kubelet";

/**
 * The StatefulSet controller for the managed Redis (one replica): its claims and its pod `<name>-0` are
 * created as Kubernetes would, so admission (Pod Security, ResourceQuota) sees the pod; a refusal is
 * the controller's `FailedCreate` Warning Event on the StatefulSet and no replica. The pod runs
 * nothing (the documented shortcut: agent servers use the test Redis) and is reported ready.
 * `lastFailure` remembers what was last reported per StatefulSet, so a refusal is one Event, not one per retry.
 * Returns true once the replica is ready.
 */
export async function syncRedisStatefulSet(
  kube: KubeClient,
  sts: StatefulSet,
  nodeName: string,
  lastFailure: Map<string, string>,
): Promise<boolean> {
  const namespace = sts.metadata?.namespace as string;
  const name = sts.metadata?.name as string;
  const key = `${namespace}/${name}`;
  const podName = `${name}-0`;
  let failure: string | undefined;
  try {
    await createClaims(kube, sts, podName);
    await createPod(kube, sts, podName, nodeName);
  } catch (error) {
    if (!(error instanceof KubeApiError)) throw error;
    failure = `create Pod ${podName} in StatefulSet ${name} failed error: ${error.message}`;
  }
  if (failure && lastFailure.get(key) !== failure) {
    await recordWarning(kube, sts, "FailedCreate", failure, "statefulset-controller");
  }
  if (failure) lastFailure.set(key, failure);
  else lastFailure.delete(key);
  const ready = failure ? 0 : 1;
  const status = {
    observedGeneration: sts.metadata?.generation,
    replicas: ready,
    readyReplicas: ready,
    currentReplicas: ready,
    updatedReplicas: ready,
    availableReplicas: ready,
  };
  if (JSON.stringify(status) !== JSON.stringify(sts.status)) {
    await kube.mergePatch(`${resourcePath(resources.statefulSet, namespace, name)}/status`, { status }, FIELD_MANAGER);
  }
  return ready === 1;
}

/** `<template>-<pod>` claims, created before the pod and never owned by the StatefulSet (as Kubernetes does). */
async function createClaims(kube: KubeClient, sts: StatefulSet, podName: string): Promise<void> {
  const namespace = sts.metadata?.namespace as string;
  for (const template of sts.spec.volumeClaimTemplates ?? []) {
    const claimName = `${template.metadata?.name}-${podName}`;
    if (await kube.get(resourcePath(resources.persistentVolumeClaim, namespace, claimName))) continue;
    await kube.create(resourcePath(resources.persistentVolumeClaim, namespace), {
      apiVersion: "v1",
      kind: "PersistentVolumeClaim",
      metadata: {
        name: claimName,
        namespace,
        labels: { ...template.metadata?.labels, ...sts.spec.template.metadata?.labels },
      },
      spec: template.spec,
    });
  }
}

async function createPod(kube: KubeClient, sts: StatefulSet, podName: string, nodeName: string): Promise<void> {
  const namespace = sts.metadata?.namespace as string;
  const path = resourcePath(resources.pod, namespace, podName);
  if (await kube.get(path)) return;
  const claims = (sts.spec.volumeClaimTemplates ?? []).map((t) => ({
    name: t.metadata?.name as string,
    persistentVolumeClaim: { claimName: `${t.metadata?.name}-${podName}` },
  }));
  const spec = sts.spec.template.spec as PodSpec & { volumes?: unknown[] };
  try {
    await kube.create(resourcePath(resources.pod, namespace), {
      apiVersion: "v1",
      kind: "Pod",
      metadata: {
        name: podName,
        namespace,
        labels: { ...sts.spec.template.metadata?.labels, "statefulset.kubernetes.io/pod-name": podName },
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "StatefulSet",
            name: sts.metadata?.name as string,
            uid: sts.metadata?.uid as string,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: { ...spec, volumes: [...(spec.volumes ?? []), ...claims], nodeName },
    });
  } catch (error) {
    if (!isConflict(error)) throw error;
  }
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const condition = (type: string) => ({ type, status: "True", lastTransitionTime: now });
  const status = {
    phase: "Running",
    conditions: ["PodScheduled", "Initialized", "ContainersReady", "Ready"].map(condition),
    containerStatuses: spec.containers.map((c) => ({
      name: c.name,
      image: c.image,
      imageID: "",
      ready: true,
      restartCount: 0,
      state: { running: { startedAt: now } },
    })),
  };
  await kube.mergePatch(`${path}/status`, { status }, FIELD_MANAGER);
}
