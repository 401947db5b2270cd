import {
  AGENT_DEPLOYMENT_KIND,
  AGENT_DEPLOYMENT_PLURAL,
  AGENT_REVISION_KIND,
  AGENT_REVISION_PLURAL,
  API_VERSION,
} from "@agentplane/crds";

/** The kinds the operator reads or writes, with their REST paths (no discovery round-trips needed). */
export interface ResourceType {
  apiVersion: string;
  kind: string;
  plural: string;
}

export const resources = {
  agentDeployment: { apiVersion: API_VERSION, kind: AGENT_DEPLOYMENT_KIND, plural: AGENT_DEPLOYMENT_PLURAL },
  agentRevision: { apiVersion: API_VERSION, kind: AGENT_REVISION_KIND, plural: AGENT_REVISION_PLURAL },
  deployment: { apiVersion: "apps/v1", kind: "Deployment", plural: "deployments" },
  replicaSet: { apiVersion: "apps/v1", kind: "ReplicaSet", plural: "replicasets" },
  statefulSet: { apiVersion: "apps/v1", kind: "StatefulSet", plural: "statefulsets" },
  service: { apiVersion: "v1", kind: "Service", plural: "services" },
  pod: { apiVersion: "v1", kind: "Pod", plural: "pods" },
  secret: { apiVersion: "v1", kind: "Secret", plural: "secrets" },
  configMap: { apiVersion: "v1", kind: "ConfigMap", plural: "configmaps" },
  serviceAccount: { apiVersion: "v1", kind: "ServiceAccount", plural: "serviceaccounts" },
  networkPolicy: { apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", plural: "networkpolicies" },
  persistentVolumeClaim: { apiVersion: "v1", kind: "PersistentVolumeClaim", plural: "persistentvolumeclaims" },
  hpa: { apiVersion: "autoscaling/v2", kind: "HorizontalPodAutoscaler", plural: "horizontalpodautoscalers" },
  event: { apiVersion: "events.k8s.io/v1", kind: "Event", plural: "events" },
  /** What kube-controller-manager's controllers record (e.g. `FailedCreate` for a refused pod). */
  coreEvent: { apiVersion: "v1", kind: "Event", plural: "events" },
  lease: { apiVersion: "coordination.k8s.io/v1", kind: "Lease", plural: "leases" },
} as const satisfies Record<string, ResourceType>;

/** `/api/v1/namespaces/ns/pods[/name]` or `/apis/apps/v1/namespaces/ns/deployments[/name]`; no namespace = all. */
export function resourcePath(type: ResourceType, namespace?: string, name?: string): string {
  const base = type.apiVersion.includes("/") ? `/apis/${type.apiVersion}` : `/api/${type.apiVersion}`;
  const scoped = namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}` : base;
  const collection = `${scoped}/${type.plural}`;
  return name ? `${collection}/${encodeURIComponent(name)}` : collection;
}

const byKind = new Map<string, ResourceType>(Object.values(resources).map((r) => [`${r.apiVersion}/${r.kind}`, r]));

export function resourceTypeOf(obj: { apiVersion?: string; kind?: string }): ResourceType {
  const type = byKind.get(`${obj.apiVersion}/${obj.kind}`);
  if (!type) throw new Error(`unknown kind ${obj.apiVersion}/${obj.kind}`);
  return type;
}
