import { describe, expect, it } from "vitest";
import { bestCosine, decodeVectors, encodeVectors, FIELD_PATH, textsAtPath } from "./semantic.ts";

describe("textsAtPath", () => {
  const value = { title: "T", n: 3, ok: true, tags: ["a", "b"], notes: [{ text: "x" }, { text: "y" }], meta: { k: 1 } };

  it("selects the whole value, keys, positions and wildcards", () => {
    expect(textsAtPath(value, "$")).toEqual([JSON.stringify(value)]);
    expect(textsAtPath(value, "title")).toEqual(["T"]);
    expect(textsAtPath(value, "n")).toEqual(["3"]);
    expect(textsAtPath(value, "ok")).toEqual(["true"]);
    expect(textsAtPath(value, "tags[0]")).toEqual(["a"]);
    expect(textsAtPath(value, "tags[-1]")).toEqual(["b"]);
    expect(textsAtPath(value, "notes[*].text")).toEqual(["x", "y"]);
    expect(textsAtPath(value, "meta.*")).toEqual(["1"]);
    expect(textsAtPath(value, "meta")).toEqual(['{"k":1}']);
  });

  it("selects nothing where the path does not lead", () => {
    for (const path of [
      "missing",
      "title.deeper",
      "tags[5]",
      "tags[x]",
      "tags[]",
      "meta[0]",
      "notes[*].none",
      "constructor",
      "meta.toString",
    ]) {
      expect(textsAtPath(value, path)).toEqual([]);
    }
  });
});

describe("FIELD_PATH", () => {
  it("accepts the path forms and refuses the rest", () => {
    for (const path of ["$", "title", "a.b", "tags[0]", "tags[-1]", "notes[*].text", "meta.*", "a[0][1].b"]) {
      expect(FIELD_PATH.test(path), path).toBe(true);
    }
    for (const path of ["", "a.", ".a", "a..b", "tags[]", "tags[x]", "a[0"]) {
      expect(FIELD_PATH.test(path), path).toBe(false);
    }
  });
});

describe("vectors", () => {
  it("scores by the closest of an item's vectors, and survives the trip through Redis text", () => {
    const query = Float32Array.from([1, 0]);
    const vectors = decodeVectors(encodeVectors(Float32Array.from([0, 1, 1, 1, 0, 0])));
    expect(bestCosine(query, vectors, 2)).toBeCloseTo(Math.SQRT1_2);
    expect(bestCosine(query, null, 2)).toBeUndefined();
    expect(bestCosine(query, Float32Array.from([0, 0]), 2)).toBe(0);
    // Embedded under another `dims`: treated as unindexed, not scored as NaN.
    expect(bestCosine(query, Float32Array.from([1, 0, 1]), 2)).toBeUndefined();
  });
});
