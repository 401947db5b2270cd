import { describe, expect, it } from "vitest";
import { expandVariableReferences } from "./pod-env.ts";

describe("expandVariableReferences (the kubelet's $(VAR) expansion)", () => {
  const env = { PASSWORD: "s3cret", HOST: "redis" };
  it.each([
    ["redis://:$(PASSWORD)@$(HOST):6379", "redis://:s3cret@redis:6379"],
    ["$(MISSING) stays", "$(MISSING) stays"],
    ["$$(PASSWORD) is escaped", "$(PASSWORD) is escaped"],
    ["a $ alone", "a $ alone"],
    ["no references", "no references"],
  ])("%s", (value, expected) => {
    expect(expandVariableReferences(value, env)).toBe(expected);
  });
});
