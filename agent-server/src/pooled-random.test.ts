import { describe, expect, it } from "vitest";
import { installPooledRandomValues } from "./pooled-random.ts";

describe("installPooledRandomValues", () => {
  installPooledRandomValues();
  installPooledRandomValues();

  it("fills small integer arrays with fresh bytes every call", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const bytes = crypto.getRandomValues(new Uint8Array(16));
      seen.add(Buffer.from(bytes).toString("hex"));
    }
    expect(seen.size).toBe(5000);
  });

  it("returns the array it was given, filled across its whole view, for every integer type", () => {
    const backing = new Uint8Array(64);
    const view = new Uint32Array(backing.buffer, 8, 4);
    expect(crypto.getRandomValues(view)).toBe(view);
    expect(backing.subarray(0, 8).every((byte) => byte === 0)).toBe(true);
    expect(backing.subarray(24).every((byte) => byte === 0)).toBe(true);
    expect(view.some((word) => word !== 0)).toBe(true);
    for (const array of [new Int8Array(32), new Uint16Array(16), new BigUint64Array(4), new Uint8ClampedArray(32)]) {
      expect(crypto.getRandomValues(array)).toBe(array);
    }
  });

  it("gives byte values spread over the whole range across pool refills", () => {
    const counts = new Array<number>(256).fill(0);
    for (let i = 0; i < 4000; i++)
      for (const byte of crypto.getRandomValues(new Uint8Array(64))) counts[byte] = (counts[byte] ?? 0) + 1;
    // 256,000 bytes: about 1,000 per value; a stuck or reused pool would skew this far more.
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(Math.max(...counts)).toBeLessThan(1200);
  });

  it("keeps the platform's checks for what it does not pool", () => {
    expect(() => crypto.getRandomValues(new Uint8Array(65_537))).toThrow();
    expect(() => crypto.getRandomValues(new Float64Array(2) as never)).toThrow();
    expect(crypto.getRandomValues(new Uint8Array(1024)).some((byte) => byte !== 0)).toBe(true);
  });
});
