import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../runs/testing/wait.ts";
import { watchProject } from "./watch.ts";

describe("watchProject", () => {
  it("reports a burst of source changes once and ignores dependency and build folders", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentplane-watch-"));
    mkdirSync(join(root, "src"));
    mkdirSync(join(root, "node_modules"));
    mkdirSync(join(root, "dist"));
    const changes: string[] = [];
    const watcher = watchProject(root, (file) => changes.push(file), 100);
    try {
      writeFileSync(join(root, "src", "agent.ts"), "export const a = 1;");
      writeFileSync(join(root, "src", "agent.ts"), "export const a = 2;");
      // Last in the burst: were they watched, the burst would be reported as one of these.
      writeFileSync(join(root, "node_modules", "dep.js"), "x");
      writeFileSync(join(root, "dist", "agent.js"), "x");
      await waitUntil(async () => changes.length > 0, "the burst is reported");
      // A later change reported on its own shows the burst was reported once.
      writeFileSync(join(root, "src", "other.ts"), "export const b = 1;");
      await waitUntil(async () => changes.length > 1, "the later change is reported");
      expect(changes).toEqual([join("src", "agent.ts"), join("src", "other.ts")]);
    } finally {
      watcher.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("reports an atomic save (a temporary file renamed over the original) under the original's name", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentplane-watch-"));
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "agent.ts"), "export const a = 1;");
    const changes: string[] = [];
    const watcher = watchProject(root, (file) => changes.push(file), 100);
    try {
      writeFileSync(join(root, "src", ".agent.ts.swp"), "export const a = 2;");
      renameSync(join(root, "src", ".agent.ts.swp"), join(root, "src", "agent.ts"));
      await waitUntil(async () => changes.length > 0, "the atomic save is reported");
      expect(changes).toEqual([join("src", "agent.ts")]);
      // The same, a second time: the file's new inode is still seen.
      writeFileSync(join(root, "src", ".agent.ts.swp"), "export const a = 3;");
      renameSync(join(root, "src", ".agent.ts.swp"), join(root, "src", "agent.ts"));
      await waitUntil(async () => changes.length > 1, "the second atomic save is reported");
      expect(changes.at(-1)).toBe(join("src", "agent.ts"));
    } finally {
      watcher.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("watches folders created after it started", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentplane-watch-"));
    const changes: string[] = [];
    const watcher = watchProject(root, (file) => changes.push(file), 100);
    try {
      mkdirSync(join(root, "graphs"));
      await waitUntil(async () => changes.length > 0, "the new folder is reported");
      writeFileSync(join(root, "graphs", "new.ts"), "export const n = 1;");
      await waitUntil(async () => changes.length > 1, "a file in the new folder is reported");
      expect(changes.at(-1)).toBe(join("graphs", "new.ts"));
    } finally {
      watcher.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
