import { deflateRawSync, inflateRawSync } from "node:zlib";
import type { DeltaHeader } from "./deltas.ts";
import type { WriteHeader } from "./redis-codec.ts";
import { decodeFrame, encodeFrame } from "./redis-layout.ts";

/**
 * Stored values (checkpoint records, pending writes, channel versions) behind a flag byte or
 * header field that says whether they are deflated, with a preset dictionary of what they are
 * made of: LangChain message constructors, checkpoint and metadata keys, frame headers. Only
 * large values are deflated (`LARGE`); records written while small ones were too read the same.
 *
 * The dictionary is part of the stored format: records written with it are read with it, so it
 * never changes; a different one needs a new flag byte.
 */
const DICTIONARY = Buffer.from(
  [
    '{"channel":"branch:to:","type":"json","task_path":"~__pregel_push, ~__pregel_pull, __start__","run_id":"',
    '{"t":"json","mt":"json","n":,"v":1,"h":1,"p":"1f',
    '{"v":4,"ts":"20","versions_seen":{"__input__":{},"__start__":{"__start__":},"branch:to:',
    '"run_attempt":1,"source":"input","source":"loop","step":,"parents":{},"writes":null,"writes":{"__start__":',
    '{"run_id":"","thread_id":0,"graph_id":"","assistant_id":"","created_by":"system",',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","ToolMessage"],"kwargs":{"tool_call_id":"',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","SystemMessage"],"kwargs":{"content":"',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","HumanMessage"],"kwargs":{"content":"',
    '"name":"","args":{},"type":"tool_call"},"usage_metadata":{"input_tokens":,"output_tokens":,"total_tokens":',
    '{"lc":1,"type":"constructor","id":["langchain_core","messages","AIMessage"],"kwargs":{"content":"',
    '","tool_calls":[],"invalid_tool_calls":[],"additional_kwargs":{},"response_metadata":{},"id":"',
    '"}}]}}}{"messages":[{"role":"human","content":"',
  ].join(""),
);

const PLAIN = 0x6a; // "j"
const COMPRESSED = 0x7a; // "z"

/**
 * Only values above this are compressed, at the fastest level: full copies of a channel (a
 * conversation's messages, every 256 versions), which shrink about tenfold at any level and are
 * most of what a long conversation keeps. Below it (checkpoint records, pending writes, deltas),
 * deflating cost more than it saved: with every such value compressed, a run on a fresh thread
 * took 1.57× the server CPU (3.03 → 1.93 ms without, 16 alternating rounds, load ~10) for 2.6 KiB
 * less memory per run. A full copy is read (inflated: ~2 ms for 250 KB) by every read whose delta
 * chain ends in it, unless the process still holds that version or the copy itself
 * (`KnownVersions.keepFullCopy`).
 */
export const LARGE = 16 * 1024;

const OPTIONS = { dictionary: DICTIONARY, level: 1 };

/** The bytes deflated with the dictionary; undefined when they are not large enough or would not shrink. */
export function deflate(bytes: Uint8Array): Buffer | undefined {
  if (bytes.length <= LARGE) return undefined;
  const deflated = deflateRawSync(bytes, OPTIONS);
  return deflated.length + 1 < bytes.length ? deflated : undefined;
}

export function inflate(bytes: Uint8Array): Buffer {
  return inflateRawSync(bytes, OPTIONS);
}

/** A flag byte, then the bytes deflated with the dictionary, or as they are when that is not smaller. */
export function pack(bytes: Buffer): Buffer {
  const deflated = deflate(bytes);
  return Buffer.concat([Buffer.of(deflated ? COMPRESSED : PLAIN), deflated ?? bytes]);
}

/** Whether `value` was written by `pack` (frames written before it start with `{`). */
export function isPacked(value: Buffer): boolean {
  return value[0] === PLAIN || value[0] === COMPRESSED;
}

export function unpack(value: Buffer): Buffer {
  const body = value.subarray(1);
  if (value[0] === PLAIN) return body;
  if (value[0] === COMPRESSED) return inflate(body);
  throw new Error(`not a packed value (flag ${value[0]})`);
}

/**
 * A channel version's frame (`redis-layout.ts`) with its payload compressed when that makes it
 * smaller, said by `"z":1` in the header; the header stays as it is, for scripts to read.
 */
export function blobFrame(header: object, payload: Uint8Array): Buffer {
  const deflated = deflate(payload);
  return deflated ? encodeFrame({ ...header, z: 1 }, deflated) : encodeFrame(header, payload);
}

export function decodeBlobFrame(frame: Buffer): { header: DeltaHeader; payload: Buffer } {
  const { header, payload } = decodeFrame<DeltaHeader & { z?: 1 }>(frame);
  return header.z ? { header, payload: inflate(payload) } : { header, payload };
}

/** A pending write's frame, packed whole: nothing reads a write's header inside Redis. */
export function writeFrame(header: WriteHeader, payload: Uint8Array): Buffer {
  return pack(encodeFrame(header, payload));
}

/** A pending write's frame; those written before writes were packed start with their header's `{`. */
export function decodeWriteFrame(frame: Buffer): { header: WriteHeader; payload: Buffer } {
  return decodeFrame<WriteHeader>(isPacked(frame) ? unpack(frame) : frame);
}

/**
 * Key/value entries, length-prefixed: `<length>:<key><length>:<value>` each, in order. A
 * checkpoint's pending writes as its field of `cp:wp` holds them (key: the write's field, value:
 * its frame; the scripts of `redis-layout.ts` read and extend it), and a cold segment's entries
 * before it is deflated (`segment.ts`).
 */
export function packEntries(entries: readonly (readonly [string, Buffer])[]): Buffer {
  return Buffer.concat(
    entries.flatMap(([key, value]) => {
      const name = Buffer.from(key);
      return [Buffer.from(`${name.length}:`), name, Buffer.from(`${value.length}:`), value];
    }),
  );
}

/** The entries `packEntries` wrote; throws on bytes it did not write (`what` names them). */
export function unpackEntries(bytes: Buffer, what = "packed entries"): [string, Buffer][] {
  const entries: [string, Buffer][] = [];
  let at = 0;
  const next = () => {
    const colon = bytes.indexOf(0x3a, at);
    const length = Number(bytes.toString("latin1", at, colon));
    if (colon < 0 || !Number.isSafeInteger(length) || colon + 1 + length > bytes.length) {
      throw new Error(`corrupt ${what} at byte ${at}`);
    }
    at = colon + 1 + length;
    return bytes.subarray(colon + 1, at);
  };
  while (at < bytes.length) entries.push([next().toString(), next()]);
  return entries;
}

/**
 * A packed checkpoint's pending writes: those packed with it, and those put on it since (a run
 * resumed from it), which are in its `cp:wp` field and replace a packed one of the same field.
 */
export function withLaterWrites(packed: Buffer | undefined, later: Buffer | null): [string, Buffer][] {
  const entries = new Map(packed ? unpackEntries(packed) : []);
  for (const [field, frame] of later ? unpackEntries(later) : []) entries.set(field, frame);
  return [...entries];
}
