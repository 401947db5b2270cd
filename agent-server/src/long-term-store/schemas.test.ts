import { describe, expect, it } from "vitest";
import { StoreDeleteSchema, StoreNamespacesSchema, StorePutSchema, StoreSearchSchema } from "./schemas.ts";

/** Labels the checkpoint library's `validateNamespace` throws on must be a 422 here, never reach the store. */
const badLabels = [
  ["", "empty"],
  ["a.b", "period"],
  ["a:b", "colon"],
  ["\u0000", "NUL byte (fuzz seed 1198970991)"],
];

describe("store request schemas reject bad namespace labels", () => {
  it.each(badLabels)("list_namespaces prefix/suffix %j (%s)", (label) => {
    expect(StoreNamespacesSchema.safeParse({ prefix: [label] }).success).toBe(false);
    expect(StoreNamespacesSchema.safeParse({ suffix: ["x", label] }).success).toBe(false);
  });

  it.each(badLabels)("put, delete and search namespace %j (%s)", (label) => {
    expect(StorePutSchema.safeParse({ namespace: [label], key: "k", value: {} }).success).toBe(false);
    expect(StoreDeleteSchema.safeParse({ namespace: [label], key: "k" }).success).toBe(false);
    expect(StoreSearchSchema.safeParse({ namespace_prefix: [label] }).success).toBe(false);
  });

  it("accepts wildcards and ordinary labels", () => {
    expect(StoreNamespacesSchema.parse({ prefix: ["users", "*"], suffix: ["v1"] })).toEqual({
      prefix: ["users", "*"],
      suffix: ["v1"],
    });
  });
});
