import type { AgentDeployment } from "@agentplane/crds";
import { agentName, childMetadata, redisName, selectorLabels } from "./names.ts";
import { REDIS_PORT } from "./redis.ts";
import type { BuildSettings } from "./settings.ts";

/**
 * Only this deployment's agent-server pods reach its Redis. Pod labels are the tenant's to choose
 * except the platform's own (the builder writes `app.kubernetes.io/instance` and `component` last),
 * so no other deployment's pod can carry this selector.
 */
export function buildRedisNetworkPolicy(agd: AgentDeployment) {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: childMetadata(agd, redisName(agd), "redis"),
    spec: {
      podSelector: { matchLabels: selectorLabels(agd, "redis") },
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: selectorLabels(agd, "agent-server") } }],
          ports: [{ protocol: "TCP", port: REDIS_PORT }],
        },
      ],
    },
  };
}

/**
 * The agent servers admit traffic only on their HTTP port and only from the ingress path
 * (`settings.agentIngressFrom`; by default namespaces an administrator labelled as hosting the
 * ingress controller — a namespace label, which tenants cannot set, unlike pod labels).
 */
export function buildAgentNetworkPolicy(agd: AgentDeployment, settings: BuildSettings) {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: childMetadata(agd, agentName(agd), "agent-server"),
    spec: {
      podSelector: { matchLabels: selectorLabels(agd, "agent-server") },
      policyTypes: ["Ingress"],
      // An empty `from` would admit every source: no configured peer means no ingress at all.
      ingress: settings.agentIngressFrom.length
        ? [{ from: settings.agentIngressFrom, ports: [{ protocol: "TCP", port: settings.agentPort }] }]
        : [],
    },
  };
}
