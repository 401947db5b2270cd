import type { KubeClient, KubeObject } from "../../operator/src/kube/client.ts";
import { resourcePath, resources } from "../../operator/src/kube/resources.ts";
import { controllerEvent } from "../kube-apiserver/controller-loop.ts";

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
  const event = controllerEvent(object, "Warning", reason, message, component);
  await kube.create(resourcePath(resources.coreEvent, object.metadata?.namespace), event);
}
