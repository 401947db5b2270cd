import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import type { ObjectCache } from "../controller-runtime/informer.ts";
import type { KubeObject } from "../kube/client.ts";
import type { LiveDeployment, LivePod } from "../status/rollout.ts";

export interface LiveService extends KubeObject {
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string; ports?: { port: number }[] }[] } };
}

/** A claim template's fields Kubernetes never lets change on a StatefulSet. */
export interface ClaimTemplate {
  metadata?: { name?: string };
  spec?: { storageClassName?: string; resources?: { requests?: { storage?: string } } };
}

export interface LiveStatefulSet extends KubeObject {
  spec?: { volumeClaimTemplates?: ClaimTemplate[] };
  status?: { observedGeneration?: number; replicas?: number; readyReplicas?: number };
}

/** The informer caches the reconciler reads; children are cached only when labelled as ours. */
export interface Caches {
  agentDeployments: ObjectCache<AgentDeployment>;
  agentRevisions: ObjectCache<AgentRevision>;
  deployments: ObjectCache<LiveDeployment>;
  services: ObjectCache<LiveService>;
  statefulSets: ObjectCache<LiveStatefulSet>;
  autoscalers: ObjectCache<KubeObject>;
  networkPolicies: ObjectCache<KubeObject>;
  pods: ObjectCache<LivePod>;
}

export function childCache(caches: Caches, kind: string | undefined): ObjectCache<KubeObject> {
  switch (kind) {
    case "Deployment":
      return caches.deployments;
    case "Service":
      return caches.services;
    case "StatefulSet":
      return caches.statefulSets;
    case "HorizontalPodAutoscaler":
      return caches.autoscalers;
    case "NetworkPolicy":
      return caches.networkPolicies;
    default:
      throw new Error(`no cache for child kind ${kind}`);
  }
}
