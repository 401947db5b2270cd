import { describe, expect, it } from "vitest";
import { agentDeployment, REVISION_ID } from "../testing/fixtures.ts";
import { agentDeploymentStatus, autoscalingState, type DeploymentObservation, deletingStatus } from "./deployment.ts";

const now = new Date("2026-01-01T00:00:00Z");
const later = new Date("2026-01-01T00:10:00Z");
const url = "http://agent.agents.svc.cluster.local:8000";
const deploying: DeploymentObservation = {
  active: { revisionStatus: "DEPLOYING", reason: "Deploying", message: "0 of 1" },
  rollout: { phase: "progressing", reason: "Deploying", message: "0 of 1" },
  failure: undefined,
  readyReplicas: 0,
  redisReady: true,
  url,
};
const deployed: DeploymentObservation = {
  ...deploying,
  active: { revisionStatus: "DEPLOYED", reason: "RolloutComplete", message: "" },
  rollout: { phase: "complete", message: "1 of 1 replicas available" },
  readyReplicas: 1,
};
const failed: DeploymentObservation = {
  ...deploying,
  active: { revisionStatus: "DEPLOY_FAILED", reason: "CrashLoopBackOff", message: "CrashLoopBackOff: boom" },
  failure: { reason: "CrashLoopBackOff", message: "boom" },
};

describe("agentDeploymentStatus", () => {
  it.each([
    ["deploying", deploying, { Ready: "Unknown", Progressing: "True", Degraded: "False" }, "READY", undefined],
    ["deployed", deployed, { Ready: "True", Progressing: "False", Degraded: "False" }, "READY", REVISION_ID],
    ["failed", failed, { Ready: "False", Progressing: "False", Degraded: "True" }, "READY", undefined],
    [
      "progress deadline exceeded",
      {
        ...deploying,
        active: { revisionStatus: "DEPLOY_FAILED", reason: "ProgressDeadlineExceeded", message: "slow" },
        rollout: { phase: "failed", reason: "ProgressDeadlineExceeded", message: "slow" },
      },
      { Ready: "False", Progressing: "False", Degraded: "True" },
      "READY",
      undefined,
    ],
    [
      "waiting for Redis",
      { ...deployed, redisReady: false },
      { Ready: "Unknown", Progressing: "False", Degraded: "False" },
      "AWAITING_DATABASE",
      REVISION_ID,
    ],
    [
      "deployed, then lost a replica",
      { ...deployed, rollout: { phase: "progressing", reason: "Deploying", message: "0 of 1 available" } },
      { Ready: "Unknown", Progressing: "True", Degraded: "True" },
      "READY",
      REVISION_ID,
    ],
  ] as const)("%s", (_what, seen, conditions, deploymentStatus, latestReady) => {
    const status = agentDeploymentStatus(agentDeployment({}, { generation: 4 }), seen, now);
    expect(Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c.status]))).toEqual(conditions);
    expect(status.conditions?.every((c) => c.observedGeneration === 4)).toBe(true);
    expect(status).toMatchObject({ observedGeneration: 4, latestCreatedRevision: REVISION_ID, deploymentStatus });
    expect(status.latestReadyRevision).toBe(latestReady);
    expect(status.url).toBe(latestReady ? url : undefined);
  });

  it("keeps the last ready revision while a new one rolls out", () => {
    const agd = agentDeployment({ revisionName: "next" }, {});
    agd.status = { latestReadyRevision: REVISION_ID };
    const status = agentDeploymentStatus(agd, deploying, now);
    expect(status).toMatchObject({ latestCreatedRevision: "next", latestReadyRevision: REVISION_ID, url });
  });

  it("moves lastTransitionTime only for conditions whose status changed", () => {
    const agd = agentDeployment();
    agd.status = agentDeploymentStatus(agd, deploying, now);
    const next = agentDeploymentStatus(agd, deployed, later);
    const times = Object.fromEntries((next.conditions ?? []).map((c) => [c.type, c.lastTransitionTime]));
    expect(times).toEqual({
      Ready: "2026-01-01T00:10:00Z",
      Progressing: "2026-01-01T00:10:00Z",
      Degraded: "2026-01-01T00:00:00Z",
    });
  });
});

describe("deletingStatus", () => {
  it("shows AWAITING_DELETE and Ready False", () => {
    const agd = agentDeployment();
    agd.status = agentDeploymentStatus(agd, deployed, now);
    const status = deletingStatus(agd, later);
    expect(status.deploymentStatus).toBe("AWAITING_DELETE");
    expect(status.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "Deleting" });
  });
});

describe("the Autoscaling condition", () => {
  const cannotScale = {
    conditions: [
      { type: "AbleToScale", status: "True", reason: "SucceededGetScale", message: "got the scale" },
      {
        type: "ScalingActive",
        status: "False",
        reason: "FailedGetResourceMetric",
        message:
          "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)",
      },
    ],
  };

  it("mirrors the HPA's ScalingActive, without touching Ready", () => {
    const scaling = autoscalingState({ status: cannotScale });
    expect(scaling).toEqual({
      status: "False",
      reason: "FailedGetResourceMetric",
      message: expect.stringContaining("pods.metrics.k8s.io"),
    });
    const status = agentDeploymentStatus(
      agentDeployment(),
      { ...deployed, ...(scaling ? { autoscaling: scaling } : {}) },
      now,
    );
    const byType = Object.fromEntries((status.conditions ?? []).map((c) => [c.type, c]));
    expect(byType.Ready?.status).toBe("True");
    expect(byType.Autoscaling).toMatchObject({ status: "False", reason: "FailedGetResourceMetric" });
  });

  it("is absent while the autoscaler has not reported, and dropped once there is no autoscaler", () => {
    expect(autoscalingState({ status: {} })).toBeUndefined();
    expect(autoscalingState(undefined)).toBeUndefined();
    const agd = agentDeployment();
    const before = agentDeploymentStatus(
      agd,
      { ...deployed, autoscaling: { status: "True", reason: "ValidMetricFound", message: "ok" } },
      now,
    );
    const after = agentDeploymentStatus({ ...agd, status: before }, deployed, later);
    expect(after.conditions?.map((c) => c.type)).toEqual(["Ready", "Progressing", "Degraded"]);
  });
});
