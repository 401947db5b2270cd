/** Cluster-wide knobs of the desired children (from the operator's environment, see `config.ts`). */
export interface BuildSettings {
  /** Port the agent server listens on inside the pod and the Service exposes. */
  agentPort: number;
  /** `ClusterIP` (URL = cluster DNS name) or `LoadBalancer` (URL = the load balancer's address). */
  serviceType: "ClusterIP" | "LoadBalancer";
  clusterDomain: string;
  redisImage: string;
  redisStorage: string;
  redisStorageClassName?: string;
  progressDeadlineSeconds: number;
  /** Target average CPU utilisation (percent) of the autoscaler. */
  targetCpuUtilization: number;
  /** NetworkPolicy peers admitted to the agent servers' port: the ingress path (empty = none). */
  agentIngressFrom: object[];
}

/** Label an administrator puts on the namespace(s) of the ingress controller (the default ingress path). */
export const INGRESS_NAMESPACE_LABEL = "agentplane.dev/ingress";

export const defaultBuildSettings: BuildSettings = {
  agentPort: 8000,
  serviceType: "ClusterIP",
  clusterDomain: "cluster.local",
  redisImage: "redis:7-alpine",
  redisStorage: "1Gi",
  progressDeadlineSeconds: 600,
  targetCpuUtilization: 75,
  agentIngressFrom: [{ namespaceSelector: { matchLabels: { [INGRESS_NAMESPACE_LABEL]: "true" } } }],
};
