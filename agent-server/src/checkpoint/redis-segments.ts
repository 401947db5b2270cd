import { createHash } from "node:crypto";
import { RedisScript } from "../storage/redis-script.ts";
import type { DeltaHeader } from "./deltas.ts";
import type { RedisCheckpointer } from "./redis.ts";
import { decodeFrame } from "./redis-layout.ts";
import { BASE_OF, CHAIN_GUARD, READ_RECORD } from "./redis-lua.ts";
import { packWrites, unpackWrites } from "./redis-pack.ts";
import { Plan } from "./redis-plan.ts";
import { blobListOf, decodeRecord, type RawRecord } from "./redis-record.ts";
import { readRecords, withDeltaBases } from "./redis-threads.ts";
import { decodeSegment, encodeSegment, firstOf, lastOf, type Segment, segmentName } from "./segment.ts";

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

/**
 * Moves the given checkpoints into a new segment, atomically, only if nothing they hold changed
 * since they were read (a digest of their records and pending writes) and no checkpoint that
 * stays reads a moved version through its delta chain (one written meanwhile could). KEYS: ids,
 * blobs, packed writes, segments, the thread's change counter. ARGV: record key prefix, segment
 * name, segment, digest, number of ids, the ids, then the moved blob fields. Returns 1, or 0 when
 * it gave up.
 */
const packSegmentScript = new RedisScript(`${BASE_OF}${READ_RECORD}
local prefix, count = ARGV[1], tonumber(ARGV[5])
local cold, parts = {}, {}
for i = 6, 5 + count do
  local id = ARGV[i]
  local key = prefix .. id
  if redis.call("TYPE", key).ok ~= "string" then return 0 end
  local record = redis.call("GET", key)
  local writes = redis.call("HGET", KEYS[3], id) or ""
  parts[#parts + 1] = #record .. ":" .. record .. #writes .. ":" .. writes
  cold[id] = true
end
if redis.sha1hex(table.concat(parts)) ~= ARGV[4] then return 0 end
local moved = {}
for i = 6 + count, #ARGV do moved[ARGV[i]] = true end
local seen = {}
for _, id in ipairs(redis.call("ZRANGE", KEYS[1], 0, -1)) do
  if not cold[id] then
    local _, blobs = readRecord(prefix .. id)
    for field in string.gmatch(blobs or "", "[^%z]+") do
      local link = field
      for _ = 1, ${CHAIN_GUARD} do
        if not link or seen[link] then break end
        if moved[link] then return 0 end
        seen[link] = true
        local frame = redis.call("HGET", KEYS[2], link)
        if not frame then break end
        link = baseOf(frame)
      end
    end
  end
end
redis.call("HSET", KEYS[4], ARGV[2], ARGV[3])
for i = 6, 5 + count do
  redis.call("UNLINK", prefix .. ARGV[i])
  redis.call("ZREM", KEYS[1], ARGV[i])
  redis.call("HDEL", KEYS[3], ARGV[i])
end
for i = 6 + count, #ARGV do redis.call("HDEL", KEYS[2], ARGV[i]) end
redis.call("INCR", KEYS[5])
return 1
`);

/** The digest `packSegmentScript` compares: each record and its pending writes, length-prefixed. */
function digestOf(records: Buffer[], writes: (Buffer | null)[]): string {
  const hash = createHash("sha1");
  for (const [i, record] of records.entries()) {
    const pending = writes[i] ?? Buffer.alloc(0);
    hash.update(`${record.length}:`).update(record).update(`${pending.length}:`).update(pending);
  }
  return hash.digest("hex");
}

/** Decoded segments this process read, least recently used first; bounded by their bytes. */
class SegmentCache {
  readonly #entries = new Map<string, { segment: Segment; bytes: number }>();
  #bytes = 0;
  readonly #budget: number;

  constructor(budget: number) {
    this.#budget = budget;
  }

  get(key: string): Segment | undefined {
    const entry = this.#entries.get(key);
    if (!entry) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.segment;
  }

  set(key: string, segment: Segment): void {
    let bytes = 0;
    for (const map of [segment.records, segment.writes, segment.blobs])
      for (const value of map.values()) bytes += value.length;
    this.#entries.set(key, { segment, bytes });
    this.#bytes += bytes;
    for (const [oldest, entry] of this.#entries) {
      if (this.#bytes <= this.#budget || oldest === key) break;
      this.#entries.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }
}

/** What a checkpoint read needs, as `loadTupleScript` returns it for a hot one. */
export interface ColdTuple {
  raw: Buffer;
  writes: (readonly [string, Buffer])[];
  chains: Buffer[][];
}

const SEGMENT_CACHE_BYTES = 32 * 2 ** 20;

/** A checkpointer's cold segments: reading from them and packing into them. */
export class ColdSegments {
  readonly #cache = new SegmentCache(SEGMENT_CACHE_BYTES);
  readonly #packing = new Set<string>();

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
      const entries = new Map<string, Buffer>(
        segment.writes.has(id) ? unpackWrites(segment.writes.get(id) as Buffer) : [],
      );
      for (const [field, frame] of hot ? unpackWrites(hot) : []) entries.set(field, frame);
      const fields = blobListOf(raw).split("\0").filter(Boolean);
      const chains = await Promise.all(fields.map((field) => this.#chain(scope, names, segment, field)));
      return { raw, writes: [...entries], chains };
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
      if (packed) return unpackWrites(packed);
    }
    return [];
  }

  /**
   * Whether deleting the run's checkpoints needs the scope's segments back in their keys: some
   * of them are the run's, or every hot one is (the newest left would be cold, and the latest
   * checkpoint is always hot).
   */
  async involvedInDelete(threadId: string, scope: string, runId: string): Promise<boolean> {
    const names = await this.names(scope);
    if (names.length === 0) return false;
    const runOf = async (id: string, raw: RawRecord) =>
      ((await decodeRecord(this.saver.serde, threadId, id, raw))?.metadata as { run_id?: unknown } | undefined)?.run_id;
    for (const name of names) {
      for (const [id, raw] of (await this.segment(scope, name))?.records ?? []) {
        if ((await runOf(id, raw)) === runId) return true;
      }
    }
    const { redis, keys } = this.saver;
    const hotIds = (await redis.zRange(keys.ids(scope), 0, -1)).map(String);
    const hot = await readRecords(
      this.saver,
      hotIds.map((id) => keys.checkpoint(scope, id)),
    );
    for (const [i, raw] of hot.entries()) if ((await runOf(hotIds[i] as string, raw)) !== runId) return false;
    return true;
  }

  /** Puts every checkpoint of the scope's segments back in its keys (pending writes put since merged) and drops the segments. */
  async planThaw(scope: string): Promise<Plan> {
    const { redis, keys } = this.saver;
    const plan = new Plan();
    for (const name of await this.names(scope)) {
      const segment = await this.segment(scope, name);
      if (!segment) continue;
      for (const [id, raw] of segment.records) plan.set(keys.checkpoint(scope, id), raw).zAdd(keys.ids(scope), id);
      for (const [id, packed] of segment.writes) {
        const hot = await redis.hGet(keys.packedWrites(scope), id);
        const merged = new Map(unpackWrites(packed));
        for (const [field, frame] of hot ? unpackWrites(hot) : []) merged.set(field, frame);
        plan.hSet(keys.packedWrites(scope), id, packWrites([...merged]));
      }
      for (const [field, frame] of segment.blobs) plan.hSet(keys.blobs(scope), field, frame);
    }
    return plan.unlink(keys.segments(scope));
  }

  /** Packs the scope's oldest checkpoints once it holds enough; at most one packing per scope at a time. */
  packSoon(threadId: string, scope: string, checkpoints: number): void {
    if (checkpoints < this.limits.hot + this.limits.segment || this.#packing.has(scope)) return;
    this.#packing.add(scope);
    // Off the put's path; one that gives up or fails (a write came in between, Redis went away)
    // leaves everything where it was, and the scope's next put tries again.
    this.pack(threadId, scope)
      .catch(() => false)
      .finally(() => this.#packing.delete(scope));
  }

  /** Moves all but the latest `limits.hot` checkpoints of the scope into a new segment; false when it gave up. */
  async pack(threadId: string, scope: string): Promise<boolean> {
    const { redis, keys } = this.saver;
    // The versions first, then the ids: every version listed belongs to a checkpoint listed, so
    // what the hot ones read is known for each; a checkpoint put since reads newer versions (or,
    // forking from a cold one, old ones, and the script gives up).
    const fields = (await redis.hKeys(keys.blobs(scope))).map(String);
    const ids = (await redis.zRange(keys.ids(scope), 0, -1)).map(String);
    const cold = ids.slice(0, Math.max(ids.length - this.limits.hot, 0));
    // Scopes with pending writes stored before `cp:wp` keep the layout they have.
    if (cold.length === 0 || (await redis.sCard(keys.writeIds(scope))) > 0) return false;
    const hotIds = ids.slice(cold.length);
    const [records, hotRecords, writes] = await Promise.all([
      readRecords(
        this.saver,
        cold.map((id) => keys.checkpoint(scope, id)),
      ),
      readRecords(
        this.saver,
        hotIds.map((id) => keys.checkpoint(scope, id)),
      ),
      redis.hmGet(keys.packedWrites(scope), cold),
    ]);
    // Records written before they were packed strings, or deleted meanwhile: left as they are.
    if (!records.every((raw: RawRecord) => Buffer.isBuffer(raw))) return false;
    const hotFields = hotRecords.flatMap((raw) => blobListOf(raw).split("\0")).filter(Boolean);
    const keep = await withDeltaBases(this.saver, scope, hotFields);
    const moved = fields.filter((field) => !keep.has(field));
    const frames = moved.length > 0 ? await redis.hmGet(keys.blobs(scope), moved) : [];
    const segment: Segment = { records: new Map(), writes: new Map(), blobs: new Map() };
    for (const [i, id] of cold.entries()) {
      segment.records.set(id, records[i] as Buffer);
      const pending = writes[i];
      if (pending) segment.writes.set(id, pending);
    }
    for (const [i, field] of moved.entries()) {
      const frame = frames[i];
      if (frame) segment.blobs.set(field, frame);
    }
    const name = segmentName(cold[0] as string, cold[cold.length - 1] as string);
    const packed = await packSegmentScript.run(
      redis,
      [keys.ids(scope), keys.blobs(scope), keys.packedWrites(scope), keys.segments(scope), keys.changes(threadId)],
      [
        ...[keys.checkpointPrefix(scope), name, encodeSegment(segment)],
        ...[digestOf(records as Buffer[], writes), String(cold.length), ...cold, ...moved],
      ],
    );
    return packed === 1;
  }
}
