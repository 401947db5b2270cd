import { createHash } from "node:crypto";
import { conflict } from "@agentplane/common";
import { GROUP, LABEL_TENANT_ID } from "@agentplane/crds";
import type { V1ConfigMap } from "@kubernetes/client-node";
import type { KubeClients } from "../kube/client.ts";
import { isAlreadyExists, orUndefined } from "../kube/errors.ts";
import type { Listener } from "./schemas.ts";

export const LABEL_LISTENER_ID = `${GROUP}/listener-id`;
const RECORD_KEY = "listener.json";

/** The ConfigMap's name follows from (workspace, compute_id), so the cluster itself keeps compute_id unique per workspace. */
export function listenerObjectName(tenantId: string, computeId: string): string {
  return `listener-${createHash("sha256").update(`${tenantId}/${computeId}`).digest("hex").slice(0, 40)}`;
}

export const computeIdTaken = (tenantId: string, computeId: string) =>
  conflict(`Listener for LangSmith workspace ID '${tenantId}' and compute ID '${computeId}' already exists.`);

/**
 * Registered listeners, one ConfigMap each in the control plane's own namespace, labelled with the
 * workspace and the listener id. A listener is a small record the control plane alone reads and
 * writes (no operator watches it, no schema beyond the API's): a ConfigMap needs no CRD to install
 * and no RBAC beyond what the OAuth providers already use, and stays out of tenant namespaces.
 */
export class ListenerStore {
  private readonly kube: KubeClients;
  private readonly namespace: string;

  constructor(kube: KubeClients, namespace: string) {
    this.kube = kube;
    this.namespace = namespace;
  }

  async list(tenantId: string): Promise<Listener[]> {
    const list = await this.kube.core.listNamespacedConfigMap({
      namespace: this.namespace,
      labelSelector: `${LABEL_TENANT_ID}=${tenantId},${LABEL_LISTENER_ID}`,
    });
    return list.items.map(recordOf).filter((record) => record !== undefined);
  }

  /** The workspace's listener with this id and its ConfigMap (for a replace), if there is one. */
  async find(tenantId: string, id: string): Promise<{ listener: Listener; configMap: V1ConfigMap } | undefined> {
    const list = await this.kube.core.listNamespacedConfigMap({
      namespace: this.namespace,
      labelSelector: `${LABEL_TENANT_ID}=${tenantId},${LABEL_LISTENER_ID}=${id}`,
    });
    const configMap = list.items[0];
    const listener = configMap && recordOf(configMap);
    return configMap && listener ? { listener, configMap } : undefined;
  }

  async create(tenantId: string, listener: Listener): Promise<void> {
    const body: V1ConfigMap = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name: listenerObjectName(tenantId, listener.compute_id),
        namespace: this.namespace,
        labels: { [LABEL_TENANT_ID]: tenantId, [LABEL_LISTENER_ID]: listener.id },
      },
      data: { [RECORD_KEY]: JSON.stringify(listener) },
    };
    await this.kube.core.createNamespacedConfigMap({ namespace: this.namespace, body }).catch((error: unknown) => {
      throw isAlreadyExists(error) ? computeIdTaken(tenantId, listener.compute_id) : error;
    });
  }

  /** Replaces the record; a stale `resourceVersion` fails with 409 Conflict (see `retryOnConflict`). */
  async replace(configMap: V1ConfigMap, listener: Listener): Promise<void> {
    await this.kube.core.replaceNamespacedConfigMap({
      namespace: this.namespace,
      name: configMap.metadata?.name ?? "",
      body: { ...configMap, data: { [RECORD_KEY]: JSON.stringify(listener) } },
    });
  }

  /** False when it was already gone. */
  async delete(configMap: V1ConfigMap): Promise<boolean> {
    const name = configMap.metadata?.name ?? "";
    return (
      (await orUndefined(this.kube.core.deleteNamespacedConfigMap({ namespace: this.namespace, name }))) !== undefined
    );
  }
}

function recordOf(configMap: V1ConfigMap): Listener | undefined {
  const json = configMap.data?.[RECORD_KEY];
  return json ? (JSON.parse(json) as Listener) : undefined;
}
