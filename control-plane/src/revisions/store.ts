import {
  AGENT_REVISION_PLURAL,
  type AgentDeployment,
  type AgentRevision,
  GROUP,
  LABEL_DEPLOYMENT_ID,
  type RevisionStatus,
  VERSION,
} from "@agentplane/crds";
import type { KubeClients } from "../kube/client.ts";
import { isConflict, orUndefined } from "../kube/errors.ts";

const crd = { group: GROUP, version: VERSION, plural: AGENT_REVISION_PLURAL };

/** AgentRevision custom resources: immutable snapshots whose status the operator writes. */
export class RevisionStore {
  private readonly kube: KubeClients;

  constructor(kube: KubeClients) {
    this.kube = kube;
  }

  async list(deployment: AgentDeployment): Promise<AgentRevision[]> {
    const list = (await this.kube.custom.listNamespacedCustomObject({
      ...crd,
      namespace: deployment.metadata.namespace ?? "",
      labelSelector: `${LABEL_DEPLOYMENT_ID}=${deployment.metadata.name}`,
    })) as { items: AgentRevision[] };
    return list.items;
  }

  /** The deployment's revision with this id, if there is one. */
  async find(deployment: AgentDeployment, revisionId: string): Promise<AgentRevision | undefined> {
    const revision = (await orUndefined(
      this.kube.custom.getNamespacedCustomObject({
        ...crd,
        namespace: deployment.metadata.namespace ?? "",
        name: revisionId,
      }),
    )) as AgentRevision | undefined;
    return revision?.spec.deploymentId === deployment.metadata.name ? revision : undefined;
  }

  async create(revision: AgentRevision): Promise<AgentRevision> {
    return (await this.kube.custom.createNamespacedCustomObject({
      ...crd,
      namespace: revision.metadata.namespace ?? "",
      body: revision,
    })) as AgentRevision;
  }

  async delete(namespace: string, name: string): Promise<void> {
    await orUndefined(this.kube.custom.deleteNamespacedCustomObject({ ...crd, namespace, name }));
  }

  /**
   * Moves a revision the control plane just created from CREATING to `status`. If anyone (the operator)
   * wrote a status first, theirs is newer knowledge and stays: a conflict re-reads and gives up once a
   * status exists.
   */
  async setInitialStatus(revision: AgentRevision, status: RevisionStatus): Promise<AgentRevision> {
    let current = revision;
    for (;;) {
      if (current.status?.revisionStatus) return current;
      try {
        return (await this.kube.custom.replaceNamespacedCustomObjectStatus({
          ...crd,
          namespace: current.metadata.namespace ?? "",
          name: current.metadata.name ?? "",
          body: { ...current, status: { ...current.status, revisionStatus: status } },
        })) as AgentRevision;
      } catch (error) {
        if (!isConflict(error)) throw error;
        const fresh = (await orUndefined(
          this.kube.custom.getNamespacedCustomObject({
            ...crd,
            namespace: current.metadata.namespace ?? "",
            name: current.metadata.name ?? "",
          }),
        )) as AgentRevision | undefined;
        if (!fresh) return current;
        current = fresh;
      }
    }
  }
}
