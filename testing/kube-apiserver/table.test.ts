import { describe, expect, it } from "vitest";
import { humanDuration, jsonPath } from "./table.ts";

describe("jsonPath (printer column subset)", () => {
  const object = {
    status: {
      conditions: [
        { type: "Progressing", status: "True" },
        { type: "Ready", status: "False", reason: "CrashLoop" },
      ],
      readyReplicas: 0,
    },
  };

  it.each([
    [".status.readyReplicas", [0]],
    [".status.conditions[?(@.type=='Ready')].status", ["False"]],
    ['.status.conditions[?(@.type=="Ready")].reason', ["CrashLoop"]],
    [".status.conditions[0].type", ["Progressing"]],
    [".status.conditions[*].type", ["Progressing", "Ready"]],
    [".status.missing", []],
  ])("%s", (path, expected) => {
    expect(jsonPath(object, path)).toEqual(expected);
  });
});

describe("humanDuration", () => {
  it.each([
    [5_000, "5s"],
    [119_000, "119s"],
    [150_000, "2m30s"],
    [30 * 60_000, "30m"],
    [(3 * 60 + 4) * 60_000, "3h4m"],
    [10 * 3_600_000, "10h"],
    [5 * 86_400_000, "5d"],
  ])("%d ms → %s", (ms, expected) => {
    expect(humanDuration(ms)).toBe(expected);
  });
});
