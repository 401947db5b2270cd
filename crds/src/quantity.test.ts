import { describe, expect, it } from "vitest";
import { parseQuantity } from "./quantity.ts";

describe("parseQuantity", () => {
  it.each([
    ["500m", 0.5],
    ["2", 2],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["128Mi", 128 * 2 ** 20],
    ["1k", 1000],
    ["2e3", 2000],
    ["1E-3", 0.001],
    [0.25, 0.25],
  ])("reads %s as %d", (quantity, value) => {
    expect(parseQuantity(quantity)).toBeCloseTo(value);
  });

  it.each(["", "1Kb", "Gi", "1.5 Gi", "abc", null])("refuses %j", (quantity) => {
    expect(parseQuantity(quantity)).toBeUndefined();
  });
});
