import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { decodeSegment, encodeSegment, firstOf, lastOf, type Segment, segmentName } from "./segment.ts";

const bytes = (...values: number[]) => Buffer.from(values);

describe("cold segment format", () => {
  it("gives back every record, write and frame byte for byte, binary and separators included", () => {
    const segment: Segment = {
      records: new Map([
        ["1f0-a", Buffer.from("12\nmessages\n1.5j{...}")],
        ["1f0-b", bytes(0, 58, 255, 10, 58)],
      ]),
      writes: new Map([["1f0-b", Buffer.from("3:t\u00000:12:z\u0000:")]]),
      blobs: new Map([
        ["messages\n2.123", Buffer.from('{"type":"json"}\n[]')],
        ["ünïcode\n1", bytes()],
      ]),
    };
    const decoded = decodeSegment(encodeSegment(segment));
    expect(decoded).toEqual(segment);
    expect([...decoded.records.keys()]).toEqual(["1f0-a", "1f0-b"]);
  });

  it("deflates records that are alike", () => {
    const record = (i: number) =>
      Buffer.from(`{"source":"loop","step":${i},"parents":{},"run_id":"1f0c2a61-5e07-6d11-b2c4-${i}"}`);
    const records = new Map(Array.from({ length: 64 }, (_, i) => [`id-${i}`, record(i)] as const));
    const raw = [...records.values()].reduce((sum, value) => sum + value.length, 0);
    expect(encodeSegment({ records, writes: new Map(), blobs: new Map() }).length).toBeLessThan(raw / 5);
  });

  it("refuses bytes that are not a segment", () => {
    const truncated = encodeSegment({
      records: new Map([["a", Buffer.from("x".repeat(100))]]),
      writes: new Map(),
      blobs: new Map(),
    }).subarray(0, 5);
    expect(() => decodeSegment(truncated)).toThrow();
    expect(() => decodeSegment(deflateRawSync(Buffer.from("2:qa1:b")))).toThrow(/entry kind q/);
    expect(() => decodeSegment(deflateRawSync(Buffer.from("2:ca9:b")))).toThrow(/corrupt checkpoint segment/);
  });

  it("names a segment by its id range, and a rewrite of the same range differently", () => {
    const name = segmentName("1f0-a", "1f0-z");
    expect([firstOf(name), lastOf(name)]).toEqual(["1f0-a", "1f0-z"]);
    expect(segmentName("1f0-a", "1f0-z")).not.toBe(name);
  });
});
