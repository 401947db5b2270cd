import { describe, expect, it } from "vitest";
import { setConditions, toKubeTime } from "./conditions.ts";

const t0 = new Date("2026-01-01T00:00:00.400Z");
const t1 = new Date("2026-01-01T00:05:00.900Z");

describe("setConditions", () => {
  const initial = setConditions(
    undefined,
    [{ type: "Ready", status: "Unknown", reason: "Deploying", message: "a" }],
    t0,
  );

  it("stamps whole seconds", () => {
    expect(initial[0]?.lastTransitionTime).toBe("2026-01-01T00:00:00Z");
    expect(toKubeTime(t1)).toBe("2026-01-01T00:05:00Z");
  });

  it.each([
    ["same status, new reason and message", "Unknown", "StillDeploying", "2026-01-01T00:00:00Z"],
    ["status changes", "True", "RevisionReady", "2026-01-01T00:05:00Z"],
  ] as const)("%s -> lastTransitionTime %s", (_what, status, reason, expected) => {
    const [ready] = setConditions(initial, [{ type: "Ready", status, reason, message: "b" }], t1);
    expect(ready).toEqual({ type: "Ready", status, reason, message: "b", lastTransitionTime: expected });
  });

  it("keeps other condition types and appends new ones", () => {
    const next = setConditions(initial, [{ type: "Degraded", status: "False", reason: "AsExpected", message: "" }], t1);
    expect(next.map((c) => c.type)).toEqual(["Ready", "Degraded"]);
    expect(next[0]).toBe(initial[0]);
  });
});
