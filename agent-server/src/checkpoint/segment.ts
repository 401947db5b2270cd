import { randomBytes } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { packEntries, unpackEntries } from "./redis-pack.ts";

/**
 * A cold segment: the records, pending writes and channel versions of a run of old checkpoints
 * of one scope, deflated together (`redis-segments.ts` decides what goes in and stores it).
 * Records of one thread are alike (the same keys, graph and assistant ids, versions that differ
 * in a few digits), so together they deflate ~8×, where one alone deflates ~3× for a setup cost
 * that outweighs it (docs/design/checkpoint-layout.md).
 *
 * The bytes: entries as `packEntries` writes them, each key led by its kind: `c` a record (then
 * its checkpoint id), `w` a checkpoint's packed pending writes (then its checkpoint id), `b` a
 * channel version's frame (then its blob field); deflated whole.
 */
export interface Segment {
  /** Checkpoint id → record, as stored under `cp:c:<scope>:<id>` (a packed string). */
  records: Map<string, Buffer>;
  /** Checkpoint id → its pending writes, as stored in its `cp:wp` field. */
  writes: Map<string, Buffer>;
  /** Blob field → frame, as stored in `cp:blobs`. */
  blobs: Map<string, Buffer>;
}

const KINDS = { c: "records", w: "writes", b: "blobs" } as const;
type Kind = keyof typeof KINDS;

/** Segments are written once per 16 runs of a thread, off any answer's path: the smallest output. */
const LEVEL = 9;

export function encodeSegment(segment: Segment): Buffer {
  const entries: [string, Buffer][] = [];
  for (const kind of Object.keys(KINDS) as Kind[]) {
    for (const [key, value] of segment[KINDS[kind]]) entries.push([`${kind}${key}`, value]);
  }
  return deflateRawSync(packEntries(entries), { level: LEVEL });
}

export function decodeSegment(stored: Buffer): Segment {
  const segment: Segment = { records: new Map(), writes: new Map(), blobs: new Map() };
  for (const [key, value] of unpackEntries(inflateRawSync(stored), "checkpoint segment")) {
    const map = KINDS[key[0] as Kind];
    if (!map) throw new Error(`corrupt checkpoint segment: entry kind ${key[0]}`);
    segment[map].set(key.slice(1), value);
  }
  return segment;
}

/**
 * A segment's field name in `cp:seg:<scope>`: its first and last checkpoint id (so a lookup by id
 * needs only the names) and a random tag, so a segment rewritten (a run deleted from it) gets a
 * new name and no process reads an old copy it cached.
 */
export function segmentName(firstId: string, lastId: string): string {
  return `${firstId} ${lastId} ${randomBytes(4).toString("hex")}`;
}

export const firstOf = (name: string) => name.slice(0, name.indexOf(" "));
export const lastOf = (name: string) => name.split(" ")[1] ?? "";
