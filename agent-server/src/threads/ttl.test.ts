import { describe, expect, it } from "vitest";
import { ProjectError } from "../graphs/project.ts";
import { writeProjectFile } from "../graphs/testing/project-file.ts";
import { newThread } from "./records.ts";
import { readThreadTtlSettings, threadView } from "./ttl.ts";

const projectFile = (checkpointer: unknown) => writeProjectFile({ checkpointer });

describe("checkpointer.ttl in langgraph.json", () => {
  it("sets the default thread TTL and the sweep interval", () => {
    expect(readThreadTtlSettings(projectFile({ ttl: { default_ttl: 43200, sweep_interval_minutes: 60 } }))).toEqual({
      defaultTtl: { strategy: "delete", ttl: 43200 },
      sweepIntervalMs: 3_600_000,
    });
    expect(readThreadTtlSettings(projectFile({ ttl: { strategy: "keep_latest", default_ttl: 1 } }))).toEqual({
      defaultTtl: { strategy: "keep_latest", ttl: 1 },
      sweepIntervalMs: 300_000,
    });
  });

  it("leaves threads without a TTL when there is no default", () => {
    expect(readThreadTtlSettings(projectFile(undefined))).toEqual({ sweepIntervalMs: 300_000 });
    expect(readThreadTtlSettings(projectFile({ ttl: { sweep_interval_minutes: 1 } }))).toEqual({
      sweepIntervalMs: 60_000,
    });
  });

  it("names the bad key of a malformed section", () => {
    for (const [ttl, key] of [
      [{ default_ttl: -5 }, "checkpointer.ttl.default_ttl"],
      [{ default_ttl: 1e12 }, "checkpointer.ttl.default_ttl"],
      [{ strategy: "archive" }, "checkpointer.ttl.strategy"],
      [{ sweep_interval_minutes: "hourly" }, "checkpointer.ttl.sweep_interval_minutes"],
      // Past what a Node timer holds (24.8 days), setInterval would fire every millisecond.
      [{ sweep_interval_minutes: 40_000 }, "checkpointer.ttl.sweep_interval_minutes"],
    ] as const) {
      const read = () => readThreadTtlSettings(projectFile({ ttl }));
      expect(read).toThrow(ProjectError);
      expect(read).toThrow(key);
    }
  });
});

describe("threadView", () => {
  it("shows a thread's TTL only when asked", () => {
    const thread = newThread({ ttl: { strategy: "delete", ttl: 1 } }, "2026-01-01T00:00:00.000Z");
    expect(thread.ttl).toEqual({ strategy: "delete", ttl_minutes: 1, expires_at: "2026-01-01T00:01:00.000Z" });
    expect(threadView(thread)).not.toHaveProperty("ttl");
    expect(threadView(thread, true)).toEqual(thread);
  });
});
