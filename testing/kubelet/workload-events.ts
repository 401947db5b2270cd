import { randomBytes } from "node:crypto";
import type { KubeClient, KubeObject } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";

/**
 * A core/v1 Warning Event about a workload, as kube-controller-manager's event recorder writes it
 * (the ReplicaSet and StatefulSet controllers report a refused pod this way: reason `FailedCreate`).
 */
export async function recordWarning(
  kube: KubeClient,
  object: KubeObject,
  reason: string,
  message: string,
  component: string,
): Promise<void> {
  const { name, namespace, uid } = object.metadata ?? {};
  const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  await kube.create(resourcePath(resources.coreEvent, namespace), {
    apiVersion: "v1",
    kind: "Event",
    metadata: { name: `${name}.${randomBytes(8).toString("hex")}`, namespace },
    involvedObject: { apiVersion: object.apiVersion, kind: object.kind, name, namespace, uid },
    type: "Warning",
    reason,
    message,
    source: { component },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
  });
}
