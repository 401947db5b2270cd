import { describe, expect, it } from "vitest";
import { liveDeployment, waitingPod } from "../testing/fixtures.ts";
import { type LivePod, podFailure, rolloutStatus } from "./rollout.ts";

describe("rolloutStatus (kubectl rollout-status rule)", () => {
  it.each([
    [
      "spec not yet observed",
      {
        ...liveDeployment({ updatedReplicas: 1, replicas: 1, availableReplicas: 1 }),
        status: { observedGeneration: 1, updatedReplicas: 1, replicas: 1, availableReplicas: 1 },
      },
      "progressing",
    ],
    [
      "no updated replica yet",
      liveDeployment({ replicas: 1, updatedReplicas: 0, availableReplicas: 1 }),
      "progressing",
    ],
    [
      "old replica still running",
      liveDeployment({ replicas: 2, updatedReplicas: 1, availableReplicas: 2 }),
      "progressing",
    ],
    [
      "updated but not available",
      liveDeployment({ replicas: 1, updatedReplicas: 1, availableReplicas: 0 }),
      "progressing",
    ],
    ["complete", liveDeployment({ replicas: 1, updatedReplicas: 1, availableReplicas: 1 }), "complete"],
    [
      "complete at 3 replicas",
      liveDeployment({ replicas: 3, updatedReplicas: 3, availableReplicas: 3 }, 3),
      "complete",
    ],
    ["zero replicas wanted", liveDeployment({}, 0), "complete"],
    [
      "progress deadline exceeded",
      liveDeployment({
        replicas: 1,
        updatedReplicas: 1,
        availableReplicas: 0,
        conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: "too slow" }],
      }),
      "failed",
    ],
  ])("%s -> %s", (_what, deployment, phase) => {
    expect(rolloutStatus(deployment).phase).toBe(phase);
  });

  it("carries the deadline message", () => {
    const rollout = rolloutStatus(
      liveDeployment({
        conditions: [{ type: "Progressing", status: "False", reason: "ProgressDeadlineExceeded", message: "too slow" }],
      }),
    );
    expect(rollout).toEqual({ phase: "failed", reason: "ProgressDeadlineExceeded", message: "too slow" });
  });
});

describe("podFailure", () => {
  const unschedulable: LivePod = {
    metadata: { name: "p" },
    status: {
      phase: "Pending",
      conditions: [
        { type: "PodScheduled", status: "False", reason: "Unschedulable", message: "0/3 nodes: Insufficient cpu" },
      ],
    },
  };
  const healthy: LivePod = {
    metadata: { name: "ok" },
    status: { phase: "Running", containerStatuses: [{ name: "agent-server", state: {} }] },
  };
  it.each([
    ["no pods", [], undefined],
    ["healthy pod", [healthy], undefined],
    ["still creating", [waitingPod("ContainerCreating")], undefined],
    ["image pull back-off", [waitingPod("ImagePullBackOff")], "ImagePullBackOff"],
    ["image pull error", [waitingPod("ErrImagePull")], "ImagePullBackOff"],
    ["invalid image name", [waitingPod("InvalidImageName")], "ImagePullBackOff"],
    ["crash loop", [healthy, waitingPod("CrashLoopBackOff", { exitCode: 3, restartCount: 4 })], "CrashLoopBackOff"],
    ["unschedulable", [unschedulable], "Unschedulable"],
  ] as [string, LivePod[], string | undefined][])("%s -> %s", (_what, pods, reason) => {
    expect(podFailure(pods)?.reason).toBe(reason);
  });

  it("explains a crash loop with the exit code and restarts", () => {
    expect(podFailure([waitingPod("CrashLoopBackOff", { exitCode: 3, restartCount: 4 })])?.message).toBe(
      "agent-abc: container agent-server keeps crashing with exit code 3 (restarted 4 times)",
    );
  });

  it("quotes the scheduler's message", () => {
    expect(podFailure([unschedulable])?.message).toContain("Insufficient cpu");
  });
});
