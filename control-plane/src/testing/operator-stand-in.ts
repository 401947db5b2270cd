import {
  AGENT_DEPLOYMENT_PLURAL,
  AGENT_REVISION_PLURAL,
  type AgentDeployment,
  type AgentRevision,
  GROUP,
  VERSION,
} from "@agentplane/crds";
import type { CustomObjectsApi } from "@kubernetes/client-node";

/**
 * Writes what the operator would, through the same Kubernetes API calls (status subresource,
 * finalizers), so control-plane tests can check how the API reflects it without running the operator.
 */
export class OperatorStandIn {
  private readonly custom: CustomObjectsApi;

  constructor(custom: CustomObjectsApi) {
    this.custom = custom;
  }

  private ref(plural: string, namespace: string, name: string) {
    return { group: GROUP, version: VERSION, plural, namespace, name };
  }

  async deployment(namespace: string, name: string): Promise<AgentDeployment> {
    return (await this.custom.getNamespacedCustomObject(
      this.ref(AGENT_DEPLOYMENT_PLURAL, namespace, name),
    )) as AgentDeployment;
  }

  async revision(namespace: string, name: string): Promise<AgentRevision> {
    return (await this.custom.getNamespacedCustomObject(
      this.ref(AGENT_REVISION_PLURAL, namespace, name),
    )) as AgentRevision;
  }

  async setDeploymentStatus(namespace: string, name: string, status: AgentDeployment["status"]): Promise<void> {
    const current = await this.deployment(namespace, name);
    await this.custom.replaceNamespacedCustomObjectStatus({
      ...this.ref(AGENT_DEPLOYMENT_PLURAL, namespace, name),
      body: { ...current, status: { ...current.status, ...status } },
    });
  }

  async setRevisionStatus(namespace: string, name: string, status: AgentRevision["status"]): Promise<void> {
    const current = await this.revision(namespace, name);
    await this.custom.replaceNamespacedCustomObjectStatus({
      ...this.ref(AGENT_REVISION_PLURAL, namespace, name),
      body: { ...current, status: { ...current.status, ...status } },
    });
  }

  async setFinalizers(namespace: string, name: string, finalizers: string[]): Promise<void> {
    const current = await this.deployment(namespace, name);
    await this.custom.replaceNamespacedCustomObject({
      ...this.ref(AGENT_DEPLOYMENT_PLURAL, namespace, name),
      body: { ...current, metadata: { ...current.metadata, finalizers } },
    });
  }
}
