import { describe, expect, it } from "vitest";
import { fieldSelector, labelSelector } from "./selectors.ts";
import type { KubeObject } from "./store.ts";

const object = (labels: Record<string, string>, extra: Record<string, unknown> = {}) =>
  ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "p", namespace: "ns", labels },
    ...extra,
  }) as unknown as KubeObject;

describe("labelSelector", () => {
  it.each([
    ["", {}, true],
    ["a=1", { a: "1" }, true],
    ["a==1", { a: "1" }, true],
    ["a=1", { a: "2" }, false],
    ["a!=1", {}, true],
    ["a", { a: "" }, true],
    ["!a", { a: "x" }, false],
    ["a in (1, 2),b notin (3)", { a: "2", b: "4" }, true],
    ["a in (1,2)", {}, false],
    ["agentplane.dev/tenant-id=t1", { "agentplane.dev/tenant-id": "t1" }, true],
  ])("%s on %j → %s", (selector, labels, expected) => {
    expect(labelSelector(selector)(object(labels))).toBe(expected);
  });

  it("rejects what it cannot parse with 400", () => {
    expect(() => labelSelector("a in 1")).toThrow(expect.objectContaining({ code: 400 }));
  });
});

describe("fieldSelector", () => {
  it("supports metadata fields and a few kind-specific ones", () => {
    expect(fieldSelector("metadata.name=p,metadata.namespace=ns")(object({}))).toBe(true);
    expect(fieldSelector("metadata.name!=p")(object({}))).toBe(false);
    expect(fieldSelector("status.phase=Running")(object({}, { status: { phase: "Running" } }))).toBe(true);
  });

  it("rejects unknown fields and set operators with 400", () => {
    expect(() => fieldSelector("spec.image=x")).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => fieldSelector("metadata.name in (a)")).toThrow(expect.objectContaining({ code: 400 }));
  });
});
