import type { AgentRevision, AgentRevisionStatus, RevisionStatus } from "@agentplane/crds";
import { nameOf } from "../build/names.ts";
import { type ConditionUpdate, setConditions } from "./conditions.ts";
import type { PodFailure, Rollout } from "./rollout.ts";

export interface RevisionOutcome {
  revisionStatus: RevisionStatus;
  message: string;
  /** CamelCase reason for the revision's Ready condition. */
  reason: string;
}

const NOT_YET_DEPLOYING = new Set<RevisionStatus>([
  "CREATING",
  "QUEUED",
  "AWAITING_BUILD",
  "BUILDING",
  "AWAITING_DEPLOY",
]);

/**
 * Status of the revision the deployment serves. `rollout` is undefined while the live Deployment does
 * not run this revision's template yet. DEPLOYED is final for a revision: later pod trouble degrades
 * the deployment, not the revision that was already rolled out. DEPLOY_FAILED lasts until the
 * rollout completes or another failure is read: a crash-looping container runs between its
 * restarts, and reporting DEPLOYING meanwhile had the failure come and go every restart for a
 * client polling the revision.
 */
export function activeRevisionOutcome(
  current: AgentRevisionStatus | undefined,
  rollout: Rollout | undefined,
  failure: PodFailure | undefined,
): RevisionOutcome {
  if (current?.revisionStatus === "DEPLOYED" || rollout?.phase === "complete") {
    return { revisionStatus: "DEPLOYED", reason: "RolloutComplete", message: "" };
  }
  if (rollout?.phase === "failed") {
    return {
      revisionStatus: "DEPLOY_FAILED",
      reason: rollout.reason,
      message: `${rollout.reason}: ${rollout.message}`,
    };
  }
  if (failure) {
    return {
      revisionStatus: "DEPLOY_FAILED",
      reason: failure.reason,
      message: `${failure.reason}: ${failure.message}`,
    };
  }
  if (current?.revisionStatus === "DEPLOY_FAILED") {
    const reason = current.conditions?.find((condition) => condition.type === "Ready")?.reason ?? "DeployFailed";
    return { revisionStatus: "DEPLOY_FAILED", reason, message: current.message ?? "" };
  }
  // No progress details: a revision's message is for failures, and each change would be a status write.
  return { revisionStatus: "DEPLOYING", reason: "Deploying", message: "" };
}

/**
 * A revision created before the one the deployment now serves: still waiting → SKIPPED, mid-rollout →
 * INTERRUPTED, anything else keeps its status. Revisions created in the same second as the active
 * one are left alone, since a revision created after it may not be pointed at yet.
 */
export function supersededOutcome(revision: AgentRevision, active: AgentRevision): RevisionOutcome | undefined {
  const created = Date.parse(revision.metadata.creationTimestamp ?? "");
  const activeCreated = Date.parse(active.metadata.creationTimestamp ?? "");
  if (!(created < activeCreated)) return undefined;
  const current = revision.status?.revisionStatus ?? "CREATING";
  const by = `superseded by revision ${nameOf(active)}`;
  if (NOT_YET_DEPLOYING.has(current)) return { revisionStatus: "SKIPPED", reason: "Superseded", message: by };
  if (current === "DEPLOYING") return { revisionStatus: "INTERRUPTED", reason: "Superseded", message: by };
  return undefined;
}

function readyCondition(outcome: RevisionOutcome, generation: number | undefined): ConditionUpdate {
  const status =
    outcome.revisionStatus === "DEPLOYED" ? "True" : outcome.revisionStatus === "DEPLOYING" ? "Unknown" : "False";
  return { type: "Ready", status, reason: outcome.reason, message: outcome.message, observedGeneration: generation };
}

/** The revision's full status for an outcome (conditions keep their transition times). */
export function revisionStatusFor(
  revision: AgentRevision,
  outcome: RevisionOutcome,
  readyReplicas: number,
  now: Date,
): AgentRevisionStatus {
  const generation = revision.metadata.generation;
  const previous = revision.status?.conditions;
  return {
    ...(generation === undefined ? {} : { observedGeneration: generation }),
    revisionStatus: outcome.revisionStatus,
    message: outcome.message,
    conditions: setConditions(previous, [readyCondition(outcome, generation)], now),
    readyReplicas,
  };
}
