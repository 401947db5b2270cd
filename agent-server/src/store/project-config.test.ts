import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ProjectError } from "../graphs/project.ts";
import { readStoreConfig } from "./project-config.ts";

function projectFile(store: unknown): string {
  const path = join(mkdtempSync(join(tmpdir(), "store-config-")), "langgraph.json");
  writeFileSync(path, JSON.stringify({ graphs: { agent: "./agent.ts:graph" }, store }));
  return path;
}

describe("store section of langgraph.json", () => {
  it("maps store.ttl to the store's TTL settings and notes an index", () => {
    const ttl = { default_ttl: 10080, refresh_on_read: false, sweep_interval_minutes: 60 };
    expect(readStoreConfig(projectFile({ ttl, index: { dims: 8, embed: "x:y" } }))).toEqual({
      ttl: { defaultTtl: 10080, refreshOnRead: false, sweepIntervalMinutes: 60 },
      hasIndex: true,
    });
    expect(readStoreConfig(projectFile(undefined))).toEqual({ ttl: {}, hasIndex: false });
  });

  it("names the bad key of a malformed section", () => {
    for (const [ttl, key] of [
      [{ default_ttl: 0 }, "store.ttl.default_ttl"],
      [{ refresh_on_read: "yes" }, "store.ttl.refresh_on_read"],
      [{ sweep_interval_minutes: -1 }, "store.ttl.sweep_interval_minutes"],
    ] as const) {
      const read = () => readStoreConfig(projectFile({ ttl }));
      expect(read).toThrow(ProjectError);
      expect(read).toThrow(key);
    }
  });
});
