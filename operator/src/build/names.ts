import { type AgentDeployment, LABEL_DEPLOYMENT_ID, LABEL_REVISION_ID, LABEL_TENANT_ID } from "@agentplane/crds";
import type { OwnerReference } from "../kube/client.ts";

/** Annotation holding the hash of the last applied intent, so an unchanged child is never rewritten. */
export const SPEC_HASH_ANNOTATION = "agentplane.dev/spec-hash";
export const REVISION_ANNOTATION = "agentplane.dev/revision-id";
export const FIELD_MANAGER = "agentplane-operator";
export const MANAGED_BY = "agentplane-operator";

export const REVISION_LABEL = LABEL_REVISION_ID;
export const COMPONENT_LABEL = "app.kubernetes.io/component";
export const INSTANCE_LABEL = "app.kubernetes.io/instance";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";

export type Component = "agent-server" | "redis";

/** Service names must be DNS-1035 labels (start with a letter); deployment ids are uuids. */
export function agentName(agd: AgentDeployment): string {
  return `agent-${nameOf(agd)}`;
}

/** Objects read from the API always carry a name; the generated types keep it optional. */
export function nameOf(obj: { metadata: { name?: string } }): string {
  return obj.metadata.name as string;
}

export function redisName(agd: AgentDeployment): string {
  return `${agentName(agd)}-redis`;
}

/** Labels that select a component's pods: stable for the deployment's lifetime (selectors are immutable). */
export function selectorLabels(agd: AgentDeployment, component: Component): Record<string, string> {
  return { [INSTANCE_LABEL]: nameOf(agd), [COMPONENT_LABEL]: component };
}

export function childLabels(agd: AgentDeployment, component: Component): Record<string, string> {
  return {
    "app.kubernetes.io/name": component,
    ...selectorLabels(agd, component),
    "app.kubernetes.io/part-of": "agentplane",
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [LABEL_TENANT_ID]: agd.spec.tenantId,
    [LABEL_DEPLOYMENT_ID]: nameOf(agd),
  };
}

export function ownerReference(agd: AgentDeployment): OwnerReference {
  return {
    apiVersion: agd.apiVersion,
    kind: agd.kind,
    name: nameOf(agd),
    uid: agd.metadata.uid as string,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function childMetadata(agd: AgentDeployment, name: string, component: Component) {
  return {
    name,
    namespace: agd.metadata.namespace as string,
    labels: childLabels(agd, component),
    ownerReferences: [ownerReference(agd)],
  };
}
