import type { RevisionStatus } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { agentRevision } from "../testing/fixtures.ts";
import { activeRevisionOutcome, revisionStatusFor, supersededOutcome } from "./revisions.ts";
import type { PodFailure, Rollout } from "./rollout.ts";

const progressing: Rollout = { phase: "progressing", reason: "Deploying", message: "0 of 1 updated" };
const complete: Rollout = { phase: "complete", message: "1 of 1 available" };
const deadline: Rollout = { phase: "failed", reason: "ProgressDeadlineExceeded", message: "too slow" };
const crash: PodFailure = { reason: "CrashLoopBackOff", message: "pod: keeps crashing" };

describe("activeRevisionOutcome", () => {
  it.each([
    ["not applied yet", "AWAITING_DEPLOY", undefined, undefined, "DEPLOYING"],
    ["rolling out", "DEPLOYING", progressing, undefined, "DEPLOYING"],
    ["rollout complete", "DEPLOYING", complete, undefined, "DEPLOYED"],
    ["crash loop while rolling out", "DEPLOYING", progressing, crash, "DEPLOY_FAILED"],
    ["progress deadline", "DEPLOYING", deadline, undefined, "DEPLOY_FAILED"],
    ["failed then recovered", "DEPLOY_FAILED", complete, undefined, "DEPLOYED"],
    ["failed, its container running between crashes", "DEPLOY_FAILED", progressing, undefined, "DEPLOY_FAILED"],
    ["deployed stays deployed when a pod later crashes", "DEPLOYED", progressing, crash, "DEPLOYED"],
  ] as [string, RevisionStatus, Rollout | undefined, PodFailure | undefined, RevisionStatus][])(
    "%s -> %s",
    (_what, current, rollout, failure, expected) => {
      expect(activeRevisionOutcome({ revisionStatus: current }, rollout, failure).revisionStatus).toBe(expected);
    },
  );

  it("gives the reason in the failure message", () => {
    expect(activeRevisionOutcome({ revisionStatus: "DEPLOYING" }, progressing, crash)).toEqual({
      revisionStatus: "DEPLOY_FAILED",
      reason: "CrashLoopBackOff",
      message: "CrashLoopBackOff: pod: keeps crashing",
    });
    expect(activeRevisionOutcome({ revisionStatus: "DEPLOYING" }, deadline, undefined).message).toBe(
      "ProgressDeadlineExceeded: too slow",
    );
  });

  it("keeps a failure's reason and message while its container runs between crashes", () => {
    const message = "CrashLoopBackOff: pod: keeps crashing";
    const ready = { type: "Ready", status: "False" as const, reason: "CrashLoopBackOff", message };
    const failed = {
      revisionStatus: "DEPLOY_FAILED" as const,
      message,
      conditions: [{ ...ready, lastTransitionTime: "2026-01-01T00:00:00Z" }],
    };
    expect(activeRevisionOutcome(failed, progressing, undefined)).toEqual({
      revisionStatus: "DEPLOY_FAILED",
      reason: "CrashLoopBackOff",
      message,
    });
  });
});

describe("supersededOutcome", () => {
  const active = agentRevision({}, { name: "new", creationTimestamp: "2026-01-01T00:01:00Z" });
  const older = (status: RevisionStatus, creationTimestamp = "2026-01-01T00:00:00Z") =>
    agentRevision({}, { name: "old", creationTimestamp }, { revisionStatus: status });
  it.each([
    ["waiting to deploy", older("AWAITING_DEPLOY"), "SKIPPED"],
    ["still creating", older("CREATING"), "SKIPPED"],
    ["queued", older("QUEUED"), "SKIPPED"],
    ["mid-rollout", older("DEPLOYING"), "INTERRUPTED"],
    ["deployed before (shown as replaced)", older("DEPLOYED"), undefined],
    ["failed before", older("DEPLOY_FAILED"), undefined],
    ["already skipped", older("SKIPPED"), undefined],
    ["created after the active one", older("CREATING", "2026-01-01T00:02:00Z"), undefined],
    ["created in the same second", older("AWAITING_DEPLOY", "2026-01-01T00:01:00Z"), undefined],
  ])("%s -> %s", (_what, revision, expected) => {
    expect(supersededOutcome(revision, active)?.revisionStatus).toBe(expected);
  });
});

describe("revisionStatusFor", () => {
  it.each([
    ["DEPLOYED", "True"],
    ["DEPLOYING", "Unknown"],
    ["DEPLOY_FAILED", "False"],
    ["SKIPPED", "False"],
  ] as [RevisionStatus, string][])("%s -> Ready %s", (revisionStatus, ready) => {
    const status = revisionStatusFor(
      agentRevision(),
      { revisionStatus, reason: "R", message: "m" },
      1,
      new Date("2026-01-01T00:00:00Z"),
    );
    expect(status).toMatchObject({ revisionStatus, message: "m", readyReplicas: 1, observedGeneration: 1 });
    expect(status.conditions?.[0]).toMatchObject({ type: "Ready", status: ready, reason: "R" });
  });
});
