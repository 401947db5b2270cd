import { LruCache } from "../storage/lru-cache.ts";
import type { DeltaHeader } from "./deltas.ts";
import type { RedisCheckpointer } from "./redis.ts";
import { decodeFrame } from "./redis-layout.ts";
import { CHAIN_GUARD } from "./redis-lua.ts";
import { unpackEntries, withLaterWrites } from "./redis-pack.ts";
import { blobListOf } from "./redis-record.ts";
import { packScope } from "./redis-segment-pack.ts";
import { decodeSegment, firstOf, lastOf, type Segment } from "./segment.ts";

/**
 * Cold segments (issue #21): a scope's old checkpoints, their pending writes and the channel
 * versions only they read, moved out of their keys into one deflated value (`segment.ts`), a
 * field of `cp:seg:<scope>`. What a conversation keeps per run was three records, two pending
 * writes' fields and six versions, each a key or field with its own Redis overhead: ~7 KiB a
 * run for ~370 bytes of messages; packed together ~8× less.
 *
 * The latest checkpoints stay hot (`ColdLimits.hot`), and so does every version a hot
 * checkpoint's delta chain reaches: runs, `getTuple` of the latest, puts and the scripts never
 * see a segment. Reading an older checkpoint (history, state at a checkpoint, time travel) finds
 * it in a segment by id range and rebuilds its tuple from there; a process caches the segments it
 * decoded (they never change: a rewrite gets a new name).
 */

export interface ColdLimits {
  /** Checkpoints of a scope that always stay in their keys. */
  hot: number;
  /** Checkpoints moved at once: a scope is packed when it holds `hot + segment` of them. */
  segment: number;
}

/**
 * 4 runs of 3 checkpoints stay hot, 16 go in a segment: a history of the latest 10 states never
 * inflates one, and a conversation keeps on average 12 runs' worth of hot checkpoints (~7 KiB
 * each) whatever its length (docs/performance.md).
 */
export const DEFAULT_COLD_LIMITS: ColdLimits = { hot: 12, segment: 48 };

/** The bytes a decoded segment holds, which its cache is bounded by. */
function segmentBytes(segment: Segment): number {
  let bytes = 0;
  for (const map of [segment.records, segment.writes, segment.blobs]) {
    for (const value of map.values()) bytes += value.length;
  }
  return bytes;
}

/** What a checkpoint read needs, as `loadTupleScript` returns it for a hot one. */
export interface ColdTuple {
  raw: Buffer;
  writes: (readonly [string, Buffer])[];
  chains: Buffer[][];
}

const SEGMENT_CACHE_BYTES = 32 * 2 ** 20;
/** Scopes remembered as not packable; past it the memory starts again (they are tried once more). */
const MAX_EARLIER_LAYOUT_SCOPES = 10_000;

/** A checkpointer's cold segments: reading from them and packing into them. */
export class ColdSegments {
  /** Decoded segments this process read: a segment never changes (a rewrite has a new name). */
  readonly #cache = new LruCache<Segment>(SEGMENT_CACHE_BYTES, segmentBytes);
  readonly #packing = new Set<string>();
  /** Scopes holding an earlier layout, which are never packed. */
  readonly #earlierLayout = new Set<string>();

  readonly saver: RedisCheckpointer;
  readonly limits: ColdLimits;

  constructor(saver: RedisCheckpointer, limits: ColdLimits) {
    this.saver = saver;
    this.limits = limits;
  }

  /** Segment names of a scope, newest (by last id) first. */
  async names(scope: string): Promise<string[]> {
    const names = (await this.saver.redis.hKeys(this.saver.keys.segments(scope))).map(String);
    return names.sort((a, b) => (lastOf(a) < lastOf(b) ? 1 : -1));
  }

  async segment(scope: string, name: string): Promise<Segment | undefined> {
    const key = `${scope}\n${name}`;
    const cached = this.#cache.get(key);
    if (cached) return cached;
    const stored = await this.saver.redis.hGet(this.saver.keys.segments(scope), name);
    if (!stored) return undefined;
    const segment = decodeSegment(stored);
    this.#cache.set(key, segment);
    return segment;
  }

  /** Checkpoint ids in the scope's segments, newest first, below `beforeId` when given. */
  async *ids(scope: string, beforeId: string | undefined): AsyncGenerator<string[]> {
    for (const name of await this.names(scope)) {
      if (beforeId !== undefined && firstOf(name) >= beforeId) continue;
      const segment = await this.segment(scope, name);
      if (!segment) continue;
      const ids = [...segment.records.keys()].filter((id) => beforeId === undefined || id < beforeId);
      if (ids.length > 0) yield ids.sort().reverse();
    }
  }

  /** A cold checkpoint's record, pending writes and the frames of each version it reads. */
  async tuple(scope: string, id: string): Promise<ColdTuple | undefined> {
    const names = await this.names(scope);
    for (const name of names) {
      if (id < firstOf(name) || id > lastOf(name)) continue;
      const segment = await this.segment(scope, name);
      const raw = segment?.records.get(id);
      if (!segment || !raw) continue;
      // Pending writes put since it was packed (a run resumed from it) are in its hot field.
      const hot = await this.saver.redis.hGet(this.saver.keys.packedWrites(scope), id);
      const fields = blobListOf(raw).split("\0").filter(Boolean);
      const chains = await Promise.all(fields.map((field) => this.#chain(scope, names, segment, field)));
      return { raw, writes: withLaterWrites(segment.writes.get(id), hot), chains };
    }
    return undefined;
  }

  /** A version's frames, newest first, from this segment, the hot versions or other segments; [] when one is missing. */
  async #chain(scope: string, names: string[], home: Segment, field: string): Promise<Buffer[]> {
    const chain: Buffer[] = [];
    let link: string | undefined = field;
    for (let i = 0; link !== undefined && i < CHAIN_GUARD; i++) {
      const frame: Buffer | undefined = await this.#frame(scope, names, home, link);
      if (!frame) return [];
      chain.push(frame);
      link = decodeFrame<DeltaHeader>(frame).header.base;
    }
    return chain;
  }

  async #frame(scope: string, names: string[], home: Segment, field: string): Promise<Buffer | undefined> {
    const own = home.blobs.get(field);
    if (own) return own;
    const hot = await this.saver.redis.hGet(this.saver.keys.blobs(scope), field);
    if (hot) return hot;
    for (const name of names) {
      const frame = (await this.segment(scope, name))?.blobs.get(field);
      if (frame) return frame;
    }
    return undefined;
  }

  /** A cold checkpoint's pending writes as packed in its segment (those put since are in its hot field). */
  async writes(scope: string, id: string): Promise<[string, Buffer][]> {
    for (const name of await this.names(scope)) {
      if (id < firstOf(name) || id > lastOf(name)) continue;
      const packed = (await this.segment(scope, name))?.writes.get(id);
      if (packed) return unpackEntries(packed);
    }
    return [];
  }

  /** Packs the scope's oldest checkpoints once it holds enough; at most one packing per scope at a time. */
  packSoon(threadId: string, scope: string, checkpoints: number): void {
    if (checkpoints < this.limits.hot + this.limits.segment) return;
    if (this.#packing.has(scope) || this.#earlierLayout.has(scope)) return;
    this.#packing.add(scope);
    // Off the put's path; one that gives up or fails (a write came in between, Redis went away)
    // leaves everything where it was, and the scope's next put tries again.
    this.pack(threadId, scope)
      .catch(() => false)
      .finally(() => this.#packing.delete(scope));
  }

  /** Moves all but the latest `limits.hot` checkpoints of the scope into a new segment; false when it did not. */
  async pack(threadId: string, scope: string): Promise<boolean> {
    const outcome = await packScope(this, threadId, scope);
    if (outcome === "earlier layout") {
      // Not read again on every put of such a thread (each attempt reads all its checkpoints).
      if (this.#earlierLayout.size >= MAX_EARLIER_LAYOUT_SCOPES) this.#earlierLayout.clear();
      this.#earlierLayout.add(scope);
    }
    return outcome === "packed";
  }
}
