import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { watchProject } from "./watch.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("watchProject", () => {
  it("reports a burst of source changes once and ignores dependency and build folders", async () => {
    const root = mkdtempSync(join(tmpdir(), "agentplane-watch-"));
    mkdirSync(join(root, "src"));
    mkdirSync(join(root, "node_modules"));
    const changes: string[] = [];
    const watcher = watchProject(root, (file) => changes.push(file), 100);
    try {
      writeFileSync(join(root, "node_modules", "dep.js"), "x");
      await sleep(300);
      expect(changes).toEqual([]);
      writeFileSync(join(root, "src", "agent.ts"), "export const a = 1;");
      writeFileSync(join(root, "src", "agent.ts"), "export const a = 2;");
      await sleep(400);
      expect(changes).toEqual([join("src", "agent.ts")]);
    } finally {
      watcher.close();
    }
  });
});
