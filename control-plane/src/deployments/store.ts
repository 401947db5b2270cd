import type { Logger } from "@agentplane/common";
import {
  AGENT_DEPLOYMENT_KIND,
  AGENT_DEPLOYMENT_PLURAL,
  type AgentDeployment,
  API_VERSION,
  agentDeploymentLabels,
  deploymentApiKeysSecretName,
  deploymentSecretName,
  GROUP,
  LABEL_DEPLOYMENT_ID,
  LABEL_TENANT_ID,
  VERSION,
} from "@agentplane/crds";
import type { KubeConfig, V1Secret } from "@kubernetes/client-node";
import { WatchedCollection } from "../kube/cache.ts";
import type { KubeClients } from "../kube/client.ts";
import { orUndefined } from "../kube/errors.ts";
import { apiKeyHashesData, LABEL_NAME_HASH, nameHash, secretData, secretsFromData } from "./mapping.ts";
import type { Secret } from "./schemas.ts";

const crd = { group: GROUP, version: VERSION, plural: AGENT_DEPLOYMENT_PLURAL };

const deploymentsPath = (namespace: string) =>
  `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${AGENT_DEPLOYMENT_PLURAL}`;
const secretsPath = (namespace: string) => `/api/v1/namespaces/${namespace}/secrets`;

export interface DeploymentCaches {
  deployments: WatchedCollection<AgentDeployment>;
  /** The deployments' `<id>-secrets` and `<id>-api-keys` Secrets only (label `agentplane.dev/deployment-id`). */
  secrets: WatchedCollection<V1Secret>;
}

/** Watch-fed caches of the managed namespaces' deployments and their Secrets (started by the caller). */
export function createDeploymentCaches(
  kubeConfig: KubeConfig,
  kube: KubeClients,
  namespaces: readonly string[],
  logger: Logger,
): DeploymentCaches {
  return {
    deployments: new WatchedCollection<AgentDeployment>(
      kubeConfig,
      namespaces,
      {
        path: deploymentsPath,
        list: (namespace) =>
          kube.custom.listNamespacedCustomObject({ ...crd, namespace, labelSelector: LABEL_TENANT_ID }) as Promise<{
            items: AgentDeployment[];
          }>,
      },
      LABEL_TENANT_ID,
      logger,
    ),
    secrets: new WatchedCollection<V1Secret>(
      kubeConfig,
      namespaces,
      {
        path: secretsPath,
        list: (namespace) => kube.core.listNamespacedSecret({ namespace, labelSelector: LABEL_DEPLOYMENT_ID }),
      },
      LABEL_DEPLOYMENT_ID,
      logger,
    ),
  };
}

/**
 * AgentDeployment custom resources and their `<id>-secrets` Secrets, in the namespaces this control
 * plane manages. Reads that serve GET/list come from watch-fed caches; reads that precede a write
 * (and the name-uniqueness check) go to the API server.
 */
export class DeploymentStore {
  private readonly kube: KubeClients;
  private readonly caches: DeploymentCaches;
  readonly namespaces: readonly string[];

  constructor(kube: KubeClients, namespaces: readonly string[], caches: DeploymentCaches) {
    this.kube = kube;
    this.namespaces = namespaces;
    this.caches = caches;
  }

  private async listBySelector(labelSelector: string): Promise<AgentDeployment[]> {
    const lists = await Promise.all(
      this.namespaces.map(
        (namespace) =>
          this.kube.custom.listNamespacedCustomObject({ ...crd, namespace, labelSelector }) as Promise<{
            items: AgentDeployment[];
          }>,
      ),
    );
    return lists.flatMap((list) => list.items);
  }

  async listForTenant(tenantId: string): Promise<AgentDeployment[]> {
    if (!(await this.caches.deployments.fresh())) return this.listBySelector(`${LABEL_TENANT_ID}=${tenantId}`);
    return this.namespaces.flatMap((namespace) =>
      this.caches.deployments.list(namespace).filter((d) => d.metadata.labels?.[LABEL_TENANT_ID] === tenantId),
    );
  }

  /**
   * The tenant's deployments named `name`, asked of the API server (not the cache) so that names other
   * replicas have just taken count too.
   */
  async findByName(tenantId: string, name: string): Promise<AgentDeployment[]> {
    const candidates = await this.listBySelector(`${LABEL_TENANT_ID}=${tenantId},${LABEL_NAME_HASH}=${nameHash(name)}`);
    return candidates.filter((deployment) => deployment.spec.displayName === name);
  }

  /** Like `findCurrent`, from the cache when it holds everything this process wrote. */
  async find(tenantId: string, id: string): Promise<AgentDeployment | undefined> {
    if (await this.caches.deployments.fresh()) {
      for (const namespace of this.namespaces) {
        const cached = this.caches.deployments.get(namespace, id);
        if (cached) return cached.metadata.labels?.[LABEL_TENANT_ID] === tenantId ? cached : undefined;
      }
    }
    // Not cached yet: possibly just created through another replica.
    return this.findCurrent(tenantId, id);
  }

  /** The tenant's deployment with this id, read from the API server; another tenant's is as absent as a missing one. */
  async findCurrent(tenantId: string, id: string): Promise<AgentDeployment | undefined> {
    const found = await Promise.all(
      this.namespaces.map(
        (namespace) =>
          orUndefined(this.kube.custom.getNamespacedCustomObject({ ...crd, namespace, name: id })) as Promise<
            AgentDeployment | undefined
          >,
      ),
    );
    return found.find((deployment) => deployment?.metadata.labels?.[LABEL_TENANT_ID] === tenantId);
  }

  async create(deployment: AgentDeployment): Promise<AgentDeployment> {
    const created = (await this.kube.custom.createNamespacedCustomObject({
      ...crd,
      namespace: deployment.metadata.namespace ?? "",
      body: deployment,
    })) as AgentDeployment;
    this.caches.deployments.written(created);
    return created;
  }

  /** Replaces the object; a stale `resourceVersion` fails with 409 Conflict (see `retryOnConflict`). */
  async replace(deployment: AgentDeployment): Promise<AgentDeployment> {
    const replaced = (await this.kube.custom.replaceNamespacedCustomObject({
      ...crd,
      namespace: deployment.metadata.namespace ?? "",
      name: deployment.metadata.name ?? "",
      body: deployment,
    })) as AgentDeployment;
    this.caches.deployments.written(replaced);
    return replaced;
  }

  /** Starts deletion; the operator's finalizer keeps the object (status AWAITING_DELETE) until cleanup is done. */
  async delete(deployment: AgentDeployment): Promise<void> {
    const { namespace, name } = deployment.metadata;
    const returned = (await orUndefined(
      this.kube.custom.deleteNamespacedCustomObject({ ...crd, namespace: namespace ?? "", name: name ?? "" }),
    )) as AgentDeployment | undefined;
    // With a finalizer the object stays (deletionTimestamp set, new resourceVersion); without, it is gone.
    const resourceVersion = returned?.kind === AGENT_DEPLOYMENT_KIND ? returned.metadata.resourceVersion : undefined;
    this.caches.deployments.written({ ...deployment, metadata: { ...deployment.metadata, resourceVersion } }, true);
  }

  /** Drops every finalizer of a deployment already being deleted, so it disappears without operator cleanup. */
  async dropFinalizers(deployment: AgentDeployment): Promise<void> {
    await orUndefined(this.replace({ ...deployment, metadata: { ...deployment.metadata, finalizers: [] } }));
  }

  async readSecrets(deployment: AgentDeployment): Promise<Secret[]> {
    const { namespace, name } = deployment.metadata;
    const cached = (await this.caches.secrets.fresh())
      ? this.caches.secrets.get(namespace ?? "", deploymentSecretName(name ?? ""))
      : undefined;
    return secretsFromData((cached ?? (await this.readSecret(deployment)))?.data);
  }

  private readSecret(deployment: AgentDeployment, name = deploymentSecretName(deployment.metadata.name ?? "")) {
    return orUndefined(this.kube.core.readNamespacedSecret({ namespace: deployment.metadata.namespace ?? "", name }));
  }

  /** Creates the deployment's Secret, owned by the deployment so that it goes away with it. */
  async createSecret(deployment: AgentDeployment, secrets: Secret[]): Promise<void> {
    const created = await this.kube.core.createNamespacedSecret({
      namespace: deployment.metadata.namespace ?? "",
      body: this.secretBody(deployment, deploymentSecretName(deployment.metadata.name ?? ""), secretData(secrets)),
    });
    this.caches.secrets.written(created);
  }

  /** Writes the full new secret list (last writer wins: a PATCH replaces the whole list). */
  async replaceSecret(deployment: AgentDeployment, secrets: Secret[]): Promise<void> {
    await this.upsertSecret(
      deployment,
      this.secretBody(deployment, deploymentSecretName(deployment.metadata.name ?? ""), secretData(secrets)),
    );
  }

  /** Writes the `<id>-api-keys` Secret the agent server reads its accepted API-key hashes from. */
  async writeApiKeysSecret(deployment: AgentDeployment, hashes: readonly string[]): Promise<void> {
    const name = deploymentApiKeysSecretName(deployment.metadata.name ?? "");
    await this.upsertSecret(deployment, this.secretBody(deployment, name, apiKeyHashesData(hashes)));
  }

  private async upsertSecret(deployment: AgentDeployment, body: V1Secret): Promise<void> {
    const name = body.metadata?.name ?? "";
    const existing = await this.readSecret(deployment, name);
    const namespace = deployment.metadata.namespace ?? "";
    if (!existing) {
      this.caches.secrets.written(await this.kube.core.createNamespacedSecret({ namespace, body }));
      return;
    }
    body.metadata = { ...body.metadata, resourceVersion: existing.metadata?.resourceVersion };
    this.caches.secrets.written(await this.kube.core.replaceNamespacedSecret({ namespace, name, body }));
  }

  /** Removes both of the deployment's Secrets (a missing one is no error). */
  async deleteSecrets(deployment: AgentDeployment): Promise<void> {
    const id = deployment.metadata.name ?? "";
    await Promise.all([
      this.deleteSecret(deployment, deploymentSecretName(id)),
      this.deleteSecret(deployment, deploymentApiKeysSecretName(id)),
    ]);
  }

  async deleteApiKeysSecret(deployment: AgentDeployment): Promise<void> {
    await this.deleteSecret(deployment, deploymentApiKeysSecretName(deployment.metadata.name ?? ""));
  }

  private async deleteSecret(deployment: AgentDeployment, name: string): Promise<void> {
    const namespace = deployment.metadata.namespace ?? "";
    await orUndefined(this.kube.core.deleteNamespacedSecret({ namespace, name }));
    this.caches.secrets.written({ metadata: { namespace, name } }, true);
  }

  private secretBody(deployment: AgentDeployment, name: string, data: Record<string, string>): V1Secret {
    const id = deployment.metadata.name ?? "";
    return {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name,
        namespace: deployment.metadata.namespace,
        labels: agentDeploymentLabels(deployment.spec.tenantId, id),
        ownerReferences: [
          {
            apiVersion: API_VERSION,
            kind: AGENT_DEPLOYMENT_KIND,
            name: id,
            uid: deployment.metadata.uid ?? "",
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      data,
    };
  }
}
