import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame } from "./redis-layout.ts";
import {
  blobFrame,
  decodeBlobFrame,
  decodeWriteFrame,
  isPacked,
  pack,
  packWrites,
  unpack,
  unpackWrites,
  writeFrame,
} from "./redis-pack.ts";

const message = Buffer.from(
  '[{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"It is fast",' +
    '"tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{},"id":"run-1"}}]',
);

describe("packed values", () => {
  it("compress what the dictionary knows, keep short or incompressible values as they are", () => {
    const packed = pack(message);
    expect(packed.length).toBeLessThan(message.length / 3);
    expect(unpack(packed)).toEqual(message);
    const short = Buffer.from("null");
    expect(unpack(pack(short))).toEqual(short);
    expect(pack(short).length).toBe(short.length + 1);
  });

  it("blob frames keep their header readable and say when the payload is compressed", () => {
    const frame = blobFrame({ type: "json", base: "messages\n1.5", prefix: 10, suffix: 1 }, message);
    expect(decodeFrame<{ base: string; z: number }>(frame).header).toMatchObject({ base: "messages\n1.5", z: 1 });
    expect(decodeBlobFrame(frame).payload).toEqual(message);
    // A full copy of a long conversation: compressed too, at the fastest level.
    const conversation = Buffer.from(`[${Array.from({ length: 500 }, () => message.subarray(1, -1)).join(",")}]`);
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
    expect(frame.length).toBeLessThan(message.length / 2);
    expect(decodeWriteFrame(frame)).toEqual({ header, payload: message });
    expect(decodeWriteFrame(encodeFrame(header, message))).toEqual({ header, payload: message });
  });

  it("a checkpoint's packed writes keep their fields, frames and order", () => {
    const entries: [string, Buffer][] = [
      ["task-b\u00001", writeFrame({ channel: "a", type: "json", task_path: "" }, message)],
      ["task-a\u00000", Buffer.from([0, 58, 255, 10])],
    ];
    expect(unpackWrites(packWrites(entries))).toEqual(entries);
    expect(unpackWrites(Buffer.alloc(0))).toEqual([]);
  });
});
