import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame } from "./redis-layout.ts";
import {
  blobFrame,
  decodeBlobFrame,
  decodeWriteFrame,
  isPacked,
  pack,
  packEntries,
  unpack,
  unpackEntries,
  writeFrame,
} from "./redis-pack.ts";

const message = Buffer.from(
  '[{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"It is fast",' +
    '"tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{},"id":"run-1"}}]',
);

/** A full copy of a long conversation's messages: what is large enough to be compressed. */
const conversation = Buffer.from(`[${Array.from({ length: 500 }, () => message.subarray(1, -1)).join(",")}]`);

describe("packed values", () => {
  it("compress large values, keep the others as they are behind a flag byte", () => {
    const packed = pack(conversation);
    expect(packed.length).toBeLessThan(conversation.length / 10);
    expect(unpack(packed)).toEqual(conversation);
    for (const small of [message, Buffer.from("null")]) {
      expect(pack(small).length).toBe(small.length + 1);
      expect(unpack(pack(small))).toEqual(small);
    }
  });

  it("blob frames keep their header readable and say when the payload is compressed", () => {
    const delta = blobFrame({ type: "json", base: "messages\n1.5", prefix: 10, suffix: 1 }, message);
    expect(decodeFrame<{ base: string; z?: number }>(delta).header).toEqual({
      type: "json",
      base: "messages\n1.5",
      prefix: 10,
      suffix: 1,
    });
    expect(decodeBlobFrame(delta).payload).toEqual(message);
    const large = blobFrame({ type: "json", base: "messages\n1.5", prefix: 10, suffix: 1 }, conversation);
    expect(decodeFrame<{ base: string; z: number }>(large).header).toMatchObject({ base: "messages\n1.5", z: 1 });
    expect(decodeBlobFrame(large).payload).toEqual(conversation);
    const full = blobFrame({ type: "json" }, conversation);
    expect(full.length).toBeLessThan(conversation.length / 10);
    expect(decodeBlobFrame(full).payload).toEqual(conversation);
    // Frames written before compression: their payload as it is.
    expect(decodeBlobFrame(encodeFrame({ type: "json" }, message)).payload).toEqual(message);
  });

  it("write frames are packed whole, and those written before are read as they were", () => {
    const header = { channel: "messages", type: "json", task_path: "~__pregel_pull, agent", run_id: "r" };
    const frame = writeFrame(header, message);
    expect(isPacked(frame)).toBe(true);
    expect(decodeWriteFrame(frame)).toEqual({ header, payload: message });
    const large = writeFrame(header, conversation);
    expect(large.length).toBeLessThan(conversation.length / 10);
    expect(decodeWriteFrame(large)).toEqual({ header, payload: conversation });
    expect(decodeWriteFrame(encodeFrame(header, message))).toEqual({ header, payload: message });
  });

  it("a checkpoint's packed writes keep their fields, frames and order", () => {
    const entries: [string, Buffer][] = [
      ["task-b\u00001", writeFrame({ channel: "a", type: "json", task_path: "" }, message)],
      ["task-a\u00000", Buffer.from([0, 58, 255, 10])],
    ];
    expect(unpackEntries(packEntries(entries))).toEqual(entries);
    expect(unpackEntries(Buffer.alloc(0))).toEqual([]);
    expect(() => unpackEntries(Buffer.from("9:ab"))).toThrow(/corrupt packed entries at byte 0/);
    expect(() => unpackEntries(Buffer.from("ab"))).toThrow(/corrupt packed entries/);
  });
});
