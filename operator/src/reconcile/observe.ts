import type { AgentDeployment } from "@agentplane/crds";
import { agentName, COMPONENT_LABEL, INSTANCE_LABEL, nameOf, REVISION_LABEL, redisName } from "../build/names.ts";
import type { KubeObject } from "../kube/client.ts";
import { resourcePath, resources } from "../kube/resources.ts";
import { type AutoscalingState, autoscalingState } from "../status/deployment.ts";
import { type RedisProblem, redisProblem } from "../status/redis.ts";
import type { LivePod, PodFailure } from "../status/rollout.ts";
import type { LiveService } from "./caches.ts";
import type { ReconcilerDeps } from "./reconciler.ts";

/** What the reconciler reads about the running children: the caches, and Events where only they tell why. */

interface CoreEvent extends KubeObject {
  involvedObject?: { uid?: string };
  reason?: string;
  message?: string;
  lastTimestamp?: string;
  eventTime?: string;
}

/** The pods of `revision` of the deployment's agent server. */
export function revisionPods(deps: ReconcilerDeps, agd: AgentDeployment, revision: string): LivePod[] {
  return deps.caches.pods
    .list(agd.metadata.namespace)
    .filter(
      (p) => p.metadata?.labels?.[INSTANCE_LABEL] === nameOf(agd) && p.metadata.labels[REVISION_LABEL] === revision,
    );
}

/**
 * The managed Redis's trouble, from its StatefulSet and its pod in the caches; when the StatefulSet
 * could not create its pod at all, the message of its controller's latest `FailedCreate` Event (a
 * quota's or Pod Security's own words), read only then: no Event is ever listed or watched otherwise.
 */
export async function managedRedisProblem(
  deps: ReconcilerDeps,
  agd: AgentDeployment,
): Promise<RedisProblem | undefined> {
  const namespace = agd.metadata.namespace;
  const pods = deps.caches.pods
    .list(namespace)
    .filter(
      (p) => p.metadata?.labels?.[INSTANCE_LABEL] === nameOf(agd) && p.metadata.labels[COMPONENT_LABEL] === "redis",
    );
  const sts = deps.caches.statefulSets.get(redisName(agd), namespace);
  const problem = redisProblem(sts, pods);
  if (problem?.reason !== "PodNotCreated" || !sts) return problem;
  const events = await deps.kube.list<CoreEvent>(
    resourcePath(resources.coreEvent, namespace),
    undefined,
    `involvedObject.kind=StatefulSet,involvedObject.name=${redisName(agd)},reason=FailedCreate`,
  );
  const latest = events.items
    .filter((e) => e.involvedObject?.uid === sts.metadata?.uid && e.message)
    .sort((a, b) => (a.lastTimestamp ?? a.eventTime ?? "").localeCompare(b.lastTimestamp ?? b.eventTime ?? ""))
    .at(-1);
  return redisProblem(sts, pods, latest?.message);
}

/** A Redis that cannot start, as the failure of the revision rolling out (prefixed so it is not read as the agent's). */
export function redisFailure(problem: RedisProblem | undefined): PodFailure | undefined {
  if (!problem?.definite) return undefined;
  const reason = problem.reason === "PodNotCreated" ? "FailedCreate" : problem.reason;
  return { reason, message: `managed Redis ${problem.message}` };
}

export function redisReady(deps: ReconcilerDeps, agd: AgentDeployment): boolean {
  const sts = deps.caches.statefulSets.get(redisName(agd), agd.metadata.namespace);
  return (sts?.status?.readyReplicas ?? 0) >= 1;
}

/** The load balancer's address when the Service has one, else the in-cluster DNS name. */
export function serviceUrl(deps: ReconcilerDeps, agd: AgentDeployment): string {
  const { settings, caches } = deps;
  const service: LiveService | undefined = caches.services.get(agentName(agd), agd.metadata.namespace);
  const ingress = service?.status?.loadBalancer?.ingress?.[0];
  const host = ingress?.ip ?? ingress?.hostname;
  if (host) return `http://${host}:${ingress?.ports?.[0]?.port ?? settings.agentPort}`;
  return `http://${agentName(agd)}.${agd.metadata.namespace}.svc.${settings.clusterDomain}:${settings.agentPort}`;
}

/** What the deployment's HorizontalPodAutoscaler says about scaling, if there is one. */
export function autoscaling(deps: ReconcilerDeps, agd: AgentDeployment): AutoscalingState | undefined {
  return autoscalingState(deps.caches.autoscalers.get(agentName(agd), agd.metadata.namespace));
}
