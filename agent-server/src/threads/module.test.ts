import { describe, expect, it } from "vitest";
import { defaultModules } from "../server.ts";

describe("the threads module in the server", () => {
  it("starts after the runs module, so on shutdown its TTL sweeper stops before the runs it deletes", () => {
    // Modules stop in the reverse of their start order (server.ts `stopModules`).
    const names = defaultModules().map((module) => module.name);
    expect(names.indexOf("runs")).toBeGreaterThanOrEqual(0);
    expect(names.indexOf("threads")).toBeGreaterThan(names.indexOf("runs"));
  });
});
