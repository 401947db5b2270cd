import type { AgentDeployment, AgentDeploymentStatus } from "@agentplane/crds";
import { type ConditionUpdate, setConditions } from "./conditions.ts";
import type { RedisProblem } from "./redis.ts";
import type { RevisionOutcome } from "./revisions.ts";
import type { PodFailure, Rollout } from "./rollout.ts";

export interface DeploymentObservation {
  /** Outcome of the revision named by `spec.revisionName`; undefined while that revision is not visible. */
  active: RevisionOutcome | undefined;
  rollout: Rollout | undefined;
  failure: PodFailure | undefined;
  readyReplicas: number;
  redisReady: boolean;
  /** Why the managed Redis is not ready, when that can be told. */
  redis?: RedisProblem;
  url: string | undefined;
  /** The autoscaler's own verdict (its `ScalingActive` condition), while there is one that has reported. */
  autoscaling?: AutoscalingState;
}

export interface AutoscalingState {
  status: "True" | "False" | "Unknown";
  reason: string;
  message: string;
}

/**
 * The AgentDeployment's `Autoscaling` condition: the HPA's `ScalingActive` as Kubernetes reports it
 * (e.g. no metrics server: `FailedGetResourceMetric`). It does not touch Ready: the agent servers
 * serve at their current count either way.
 */
export function autoscalingState(hpa: object | undefined): AutoscalingState | undefined {
  type Reported = { status?: { conditions?: Partial<AutoscalingState & { type: string }>[] } };
  const conditions = (hpa as Reported | undefined)?.status?.conditions;
  const active = conditions?.find((c) => c.type === "ScalingActive");
  if (!active?.status || !active.reason) return undefined;
  return { status: active.status, reason: active.reason, message: active.message ?? "" };
}

function conditionsFor(agd: AgentDeployment, seen: DeploymentObservation): ConditionUpdate[] {
  const observedGeneration = agd.metadata.generation;
  // Step-by-step rollout counts would change the message (and so rewrite status) several times per
  // rollout; the Deployment itself shows them.
  const rollingOut = `rolling out revision ${agd.spec.revisionName}`;
  const deployed = seen.active?.revisionStatus === "DEPLOYED";
  const failed = seen.active?.revisionStatus === "DEPLOY_FAILED";
  let ready: ConditionUpdate;
  if (failed) {
    ready = { type: "Ready", status: "False", reason: "RevisionFailed", message: seen.active?.message ?? "" };
  } else if (seen.redis || (deployed && !seen.redisReady)) {
    const message = seen.redis ? `waiting for Redis: ${seen.redis.message}` : "waiting for Redis";
    ready = { type: "Ready", status: "Unknown", reason: "AwaitingDatabase", message };
  } else if (deployed && seen.rollout?.phase === "complete") {
    ready = { type: "Ready", status: "True", reason: "RevisionReady", message: seen.rollout.message };
  } else {
    const message = !seen.active ? "waiting for the revision to appear" : rollingOut;
    ready = { type: "Ready", status: "Unknown", reason: "Deploying", message };
  }
  const progressing: ConditionUpdate =
    seen.rollout?.phase === "complete"
      ? { type: "Progressing", status: "False", reason: "RolloutComplete", message: seen.rollout.message }
      : seen.rollout?.phase === "failed" || failed
        ? { type: "Progressing", status: "False", reason: "RolloutFailed", message: seen.active?.message ?? "" }
        : { type: "Progressing", status: "True", reason: "Deploying", message: rollingOut };
  const redis = seen.redis && { reason: `Redis${seen.redis.reason}`, message: seen.redis.message };
  const problem = seen.failure ?? redis ?? (seen.rollout?.phase === "failed" ? seen.rollout : undefined);
  const degraded: ConditionUpdate = problem
    ? { type: "Degraded", status: "True", reason: problem.reason, message: problem.message }
    : deployed && seen.rollout && seen.rollout.phase !== "complete"
      ? { type: "Degraded", status: "True", reason: "ReplicasUnavailable", message: seen.rollout.message }
      : { type: "Degraded", status: "False", reason: "AsExpected", message: "" };
  return [ready, progressing, degraded].map((c) => ({ ...c, observedGeneration }));
}

/** The AgentDeployment's status from what the operator observed (pure; the reconciler writes it). */
export function agentDeploymentStatus(
  agd: AgentDeployment,
  seen: DeploymentObservation,
  now: Date,
): AgentDeploymentStatus {
  const previous = agd.status;
  const deployed = seen.active?.revisionStatus === "DEPLOYED";
  const latestReadyRevision = deployed ? agd.spec.revisionName : previous?.latestReadyRevision;
  const autoscaling: ConditionUpdate[] = seen.autoscaling
    ? [{ type: "Autoscaling", ...seen.autoscaling, observedGeneration: agd.metadata.generation }]
    : [];
  // No autoscaler (any more): no Autoscaling condition, rather than a stale one.
  const kept = previous?.conditions?.filter((c) => seen.autoscaling || c.type !== "Autoscaling");
  return {
    observedGeneration: agd.metadata.generation,
    conditions: setConditions(kept, [...conditionsFor(agd, seen), ...autoscaling], now),
    latestCreatedRevision: agd.spec.revisionName,
    ...(latestReadyRevision ? { latestReadyRevision } : {}),
    ...(latestReadyRevision && seen.url ? { url: seen.url } : {}),
    readyReplicas: seen.readyReplicas,
    deploymentStatus: seen.redisReady ? "READY" : "AWAITING_DATABASE",
  };
}

/** Status while the finalizer tears the children down: the control plane shows AWAITING_DELETE. */
export function deletingStatus(agd: AgentDeployment, now: Date): AgentDeploymentStatus {
  const update: ConditionUpdate = {
    type: "Ready",
    status: "False",
    reason: "Deleting",
    message: "removing the deployment's resources",
    observedGeneration: agd.metadata.generation,
  };
  return {
    ...agd.status,
    conditions: setConditions(agd.status?.conditions, [update], now),
    deploymentStatus: "AWAITING_DELETE",
  };
}
