import {
  AGENT_DEPLOYMENT_KIND,
  AGENT_REVISION_KIND,
  type AgentDeployment,
  type AgentRevision,
  API_VERSION,
  agentDeploymentLabels,
  agentRevisionLabels,
  deploymentApiKeysSecretName,
  deploymentSecretName,
  LABEL_TENANT_ID,
  revisionSecretName,
} from "@agentplane/crds";
import type { V1ObjectMeta, V1OwnerReference, V1Secret } from "@kubernetes/client-node";
import type { KubeClients } from "../kube/client.ts";
import { isAlreadyExists, orUndefined } from "../kube/errors.ts";
import { crd, type DeploymentCaches } from "./caches.ts";
import { apiKeyHashesData, LABEL_NAME_HASH, nameHash, secretData, secretsFromData } from "./mapping.ts";
import { foreignNamespace, type NamespacePlacement, ownedByTenant, tenantNamespaceObject } from "./namespaces.ts";
import type { ReferencedKind } from "./pod-references.ts";
import type { Secret } from "./schemas.ts";

/**
 * AgentDeployment custom resources and their Secrets, in the namespaces of the tenant asking (see
 * `NamespacePlacement`). Reads that serve GET/list come from watch-fed caches; reads that precede a
 * write (and the name-uniqueness check) go to the API server.
 */
export class DeploymentStore {
  private readonly kube: KubeClients;
  private readonly caches: DeploymentCaches;
  readonly placement: NamespacePlacement;

  constructor(kube: KubeClients, placement: NamespacePlacement, caches: DeploymentCaches) {
    this.kube = kube;
    this.placement = placement;
    this.caches = caches;
  }

  private async listBySelector(tenantId: string, labelSelector: string): Promise<AgentDeployment[]> {
    const lists = await Promise.all(
      this.placement.of(tenantId).map(
        (namespace) =>
          this.kube.custom.listNamespacedCustomObject({ ...crd, namespace, labelSelector }) as Promise<{
            items: AgentDeployment[];
          }>,
      ),
    );
    return lists.flatMap((list) => list.items);
  }

  async listForTenant(tenantId: string): Promise<AgentDeployment[]> {
    if (!(await this.caches.deployments.fresh())) {
      return this.listBySelector(tenantId, `${LABEL_TENANT_ID}=${tenantId}`);
    }
    return this.placement
      .of(tenantId)
      .flatMap((namespace) =>
        this.caches.deployments.list(namespace).filter((d) => d.metadata.labels?.[LABEL_TENANT_ID] === tenantId),
      );
  }

  /**
   * The tenant's deployments named `name`, asked of the API server (not the cache) so that names other
   * replicas have just taken count too.
   */
  async findByName(tenantId: string, name: string): Promise<AgentDeployment[]> {
    const candidates = await this.listBySelector(
      tenantId,
      `${LABEL_TENANT_ID}=${tenantId},${LABEL_NAME_HASH}=${nameHash(name)}`,
    );
    return candidates.filter((deployment) => deployment.spec.displayName === name);
  }

  /** Like `findCurrent`, from the cache when it holds everything this process wrote. */
  async find(tenantId: string, id: string): Promise<AgentDeployment | undefined> {
    if (await this.caches.deployments.fresh()) {
      for (const namespace of this.placement.of(tenantId)) {
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
      this.placement
        .of(tenantId)
        .map(
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

  /**
   * Creates the workspace's namespace unless it exists; one that exists must be the one created for
   * this workspace (labelled so), never a namespace that merely has the expected name.
   */
  async ensureTenantNamespace(namespace: string, tenantId: string): Promise<void> {
    if (!this.placement.perWorkspace) return;
    const existing = await orUndefined(this.kube.core.readNamespace({ name: namespace }));
    if (existing) {
      if (!ownedByTenant(existing, tenantId)) throw foreignNamespace(namespace);
      return;
    }
    await this.kube.core.createNamespace({ body: tenantNamespaceObject(namespace, tenantId) }).catch((error) => {
      // Another replica (or request) of the same workspace got there first.
      if (!isAlreadyExists(error)) throw error;
    });
  }

  /** The annotations of a Secret, ConfigMap or ServiceAccount a deployment names; undefined if there is none. */
  async referencedAnnotations(
    kind: ReferencedKind,
    namespace: string,
    name: string,
  ): Promise<Record<string, string> | undefined> {
    const read =
      kind === "Secret"
        ? this.kube.core.readNamespacedSecret({ namespace, name })
        : kind === "ConfigMap"
          ? this.kube.core.readNamespacedConfigMap({ namespace, name })
          : this.kube.core.readNamespacedServiceAccount({ namespace, name });
    const object = await orUndefined<{ metadata?: V1ObjectMeta }>(read);
    return object ? (object.metadata?.annotations ?? {}) : undefined;
  }

  /** The `secrets` the deployment's current revision runs with. */
  async readSecrets(deployment: AgentDeployment): Promise<Secret[]> {
    const { namespace } = deployment.metadata;
    const name = secretNameOf(deployment);
    const cached = (await this.caches.secrets.fresh()) ? this.caches.secrets.get(namespace ?? "", name) : undefined;
    return secretsFromData((cached ?? (await this.readSecret(deployment, name)))?.data);
  }

  private readSecret(deployment: AgentDeployment, name: string) {
    return orUndefined(this.kube.core.readNamespacedSecret({ namespace: deployment.metadata.namespace ?? "", name }));
  }

  /**
   * Creates the immutable Secret with the `secrets` of `revision`, owned by the revision so that it
   * goes away with it (and with the deployment, which owns the revision).
   */
  async createRevisionSecret(deployment: AgentDeployment, revision: AgentRevision, secrets: Secret[]): Promise<void> {
    const deploymentId = deployment.metadata.name ?? "";
    const revisionId = revision.metadata.name ?? "";
    const body: V1Secret = {
      ...this.secretBody(deployment, revisionSecretName(deploymentId, revisionId), secretData(secrets)),
      immutable: true,
    };
    body.metadata = {
      ...body.metadata,
      labels: agentRevisionLabels(deployment.spec.tenantId, deploymentId, revisionId),
      ownerReferences: [ownerReference(AGENT_REVISION_KIND, revisionId, revision.metadata.uid)],
    };
    const created = await this.kube.core.createNamespacedSecret({
      namespace: deployment.metadata.namespace ?? "",
      body,
    });
    this.caches.secrets.written(created);
  }

  async deleteRevisionSecret(deployment: AgentDeployment, revisionId: string): Promise<void> {
    await this.deleteSecret(deployment, revisionSecretName(deployment.metadata.name ?? "", revisionId));
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

  /** Removes the deployment's Secrets: its current revision's and the API keys (a missing one is no error). */
  async deleteSecrets(deployment: AgentDeployment): Promise<void> {
    await Promise.all([
      this.deleteSecret(deployment, secretNameOf(deployment)),
      this.deleteSecret(deployment, deploymentApiKeysSecretName(deployment.metadata.name ?? "")),
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
        ownerReferences: [ownerReference(AGENT_DEPLOYMENT_KIND, id, deployment.metadata.uid)],
      },
      data,
    };
  }
}

const ownerReference = (kind: string, name: string, uid: string | undefined): V1OwnerReference => ({
  apiVersion: API_VERSION,
  kind,
  name,
  uid: uid ?? "",
  controller: true,
  blockOwnerDeletion: true,
});

/** The Secret the deployment's current revision reads; deployments from before per-revision Secrets name none. */
const secretNameOf = (deployment: AgentDeployment) =>
  deployment.spec.template.secretName ?? deploymentSecretName(deployment.metadata.name ?? "");
