import type { Logger } from "@agentplane/common";
import {
  AGENT_DEPLOYMENT_PLURAL,
  type AgentDeployment,
  GROUP,
  LABEL_DEPLOYMENT_ID,
  LABEL_TENANT_ID,
  VERSION,
} from "@agentplane/crds";
import type { KubeConfig, V1Secret } from "@kubernetes/client-node";
import { WatchedCollection, type WatchScope } from "../kube/cache.ts";
import type { KubeClients } from "../kube/client.ts";

/** The AgentDeployment custom resource, as the custom-objects API names it. */
export const crd = { group: GROUP, version: VERSION, plural: AGENT_DEPLOYMENT_PLURAL };

const deploymentsPath = (namespace: string | undefined) =>
  namespace
    ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${AGENT_DEPLOYMENT_PLURAL}`
    : `/apis/${GROUP}/${VERSION}/${AGENT_DEPLOYMENT_PLURAL}`;
const secretsPath = (namespace: string | undefined) =>
  namespace ? `/api/v1/namespaces/${namespace}/secrets` : "/api/v1/secrets";

export interface DeploymentCaches {
  deployments: WatchedCollection<AgentDeployment>;
  /** The deployments' own Secrets only (`secrets` per revision, API keys; label `agentplane.dev/deployment-id`). */
  secrets: WatchedCollection<V1Secret>;
}

/** Watch-fed caches of the managed namespaces' deployments and their Secrets (started by the caller). */
export function createDeploymentCaches(
  kubeConfig: KubeConfig,
  kube: KubeClients,
  scope: WatchScope,
  logger: Logger,
): DeploymentCaches {
  return {
    deployments: new WatchedCollection<AgentDeployment>(
      kubeConfig,
      scope,
      {
        path: deploymentsPath,
        list: (namespace) =>
          (namespace
            ? kube.custom.listNamespacedCustomObject({ ...crd, namespace, labelSelector: LABEL_TENANT_ID })
            : kube.custom.listClusterCustomObject({ ...crd, labelSelector: LABEL_TENANT_ID })) as Promise<{
            items: AgentDeployment[];
          }>,
      },
      LABEL_TENANT_ID,
      logger,
    ),
    secrets: new WatchedCollection<V1Secret>(
      kubeConfig,
      scope,
      {
        path: secretsPath,
        list: (namespace) =>
          namespace
            ? kube.core.listNamespacedSecret({ namespace, labelSelector: LABEL_DEPLOYMENT_ID })
            : kube.core.listSecretForAllNamespaces({ labelSelector: LABEL_DEPLOYMENT_ID }),
      },
      LABEL_DEPLOYMENT_ID,
      logger,
    ),
  };
}
