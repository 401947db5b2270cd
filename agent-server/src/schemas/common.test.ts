import { HttpError } from "@agentplane/common";
import { describe, expect, it } from "vitest";
import { METADATA_MAX_KEY_LENGTH, METADATA_MAX_KEYS, MetadataSchema, mergeMetadata } from "./common.ts";

const withKeys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, i]));

describe("MetadataSchema", () => {
  it("accepts up to the key limit, nested values included", () => {
    expect(MetadataSchema.safeParse({ ...withKeys(METADATA_MAX_KEYS - 1), nested: { a: [1] } }).success).toBe(true);
  });

  it("refuses more keys than the limit", () => {
    const parsed = MetadataSchema.safeParse(withKeys(METADATA_MAX_KEYS + 1));
    expect(parsed.error?.issues[0]?.message).toBe(`metadata must have at most ${METADATA_MAX_KEYS} keys`);
  });

  it("refuses a key longer than the limit, at that key", () => {
    const key = "k".repeat(METADATA_MAX_KEY_LENGTH + 1);
    const parsed = MetadataSchema.safeParse({ [key]: 1, short: 2 });
    expect(parsed.error?.issues).toMatchObject([{ path: [key], message: expect.stringContaining("at most 256") }]);
    expect(MetadataSchema.safeParse({ ["k".repeat(METADATA_MAX_KEY_LENGTH)]: 1 }).success).toBe(true);
  });
});

describe("mergeMetadata", () => {
  it("merges up to the key limit, refuses to widen past it, lets a wider record change its keys", () => {
    expect(Object.keys(mergeMetadata(withKeys(100), withKeys(METADATA_MAX_KEYS)))).toHaveLength(METADATA_MAX_KEYS);
    expect(() => mergeMetadata(withKeys(METADATA_MAX_KEYS), { extra: 1 })).toThrow(HttpError);
    const wide = withKeys(METADATA_MAX_KEYS + 2);
    expect(mergeMetadata(wide, { k0: "x" })).toEqual({ ...wide, k0: "x" });
  });
});
