import { createHash } from "node:crypto";
import { RedisScript } from "../storage/redis-script.ts";
import { BASE_OF, CHAIN_GUARD, READ_RECORD } from "./redis-lua.ts";
import { packEntries, withLaterWrites } from "./redis-pack.ts";
import { Plan } from "./redis-plan.ts";
import { readRecords, withDeltaBases } from "./redis-reads.ts";
import { blobListOf, type RawRecord, runIdOfRecord } from "./redis-record.ts";
import type { ColdSegments } from "./redis-segments.ts";
import { encodeSegment, type Segment, segmentName } from "./segment.ts";

/**
 * Writing cold segments (`redis-segments.ts` reads them): packing a scope's old checkpoints into
 * one, and putting a scope's segments back in their keys when a run that touches them is deleted.
 */

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

/** Moves all but the latest `limits.hot` checkpoints of the scope into a new segment; false when it gave up. */
/** What packing a scope came to: an earlier layout is never packed, and not tried again. */
export type PackOutcome = "packed" | "gave up" | "earlier layout";

export async function packScope(segments: ColdSegments, threadId: string, scope: string): Promise<PackOutcome> {
  const { redis, keys } = segments.saver;
  // Scopes with pending writes stored before `cp:wp` keep the layout they have.
  if ((await redis.sCard(keys.writeIds(scope))) > 0) return "earlier layout";
  // The versions first, then the ids: every version listed belongs to a checkpoint listed, so
  // what the hot ones read is known for each; a checkpoint put since reads newer versions (or,
  // forking from a cold one, old ones, and the script gives up).
  const fields = (await redis.hKeys(keys.blobs(scope))).map(String);
  const ids = (await redis.zRange(keys.ids(scope), 0, -1)).map(String);
  const cold = ids.slice(0, Math.max(ids.length - segments.limits.hot, 0));
  if (cold.length === 0) return "gave up";
  const hotIds = ids.slice(cold.length);
  const [records, hotRecords, writes] = await Promise.all([
    readRecords(
      segments.saver,
      cold.map((id) => keys.checkpoint(scope, id)),
    ),
    readRecords(
      segments.saver,
      hotIds.map((id) => keys.checkpoint(scope, id)),
    ),
    redis.hmGet(keys.packedWrites(scope), cold),
  ]);
  // Records written before they were packed strings stay as they are; one deleted meanwhile: later.
  if (records.some((raw: RawRecord) => raw !== null && !Buffer.isBuffer(raw))) return "earlier layout";
  if (!records.every((raw: RawRecord) => Buffer.isBuffer(raw))) return "gave up";
  const hotFields = hotRecords.flatMap((raw) => blobListOf(raw).split("\0")).filter(Boolean);
  const keep = await withDeltaBases(segments.saver, scope, hotFields);
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
  return packed === 1 ? "packed" : "gave up";
}

/**
 * Whether deleting the run's checkpoints needs the scope's segments back in their keys: some
 * of them are the run's, or every hot one is (the newest left would be cold, and the latest
 * checkpoint is always hot).
 */
export async function involvedInDelete(
  segments: ColdSegments,
  threadId: string,
  scope: string,
  runId: string,
): Promise<boolean> {
  const names = await segments.names(scope);
  if (names.length === 0) return false;
  const runOf = (id: string, raw: RawRecord) => runIdOfRecord(segments.saver.serde, threadId, id, raw);
  for (const name of names) {
    for (const [id, raw] of (await segments.segment(scope, name))?.records ?? []) {
      if ((await runOf(id, raw)) === runId) return true;
    }
  }
  const { redis, keys } = segments.saver;
  const hotIds = (await redis.zRange(keys.ids(scope), 0, -1)).map(String);
  const hot = await readRecords(
    segments.saver,
    hotIds.map((id) => keys.checkpoint(scope, id)),
  );
  for (const [i, raw] of hot.entries()) if ((await runOf(hotIds[i] as string, raw)) !== runId) return false;
  return true;
}

/** Puts every checkpoint of the scope's segments back in its keys (pending writes put since merged) and drops the segments. */
export async function planThaw(segments: ColdSegments, scope: string): Promise<Plan> {
  const { redis, keys } = segments.saver;
  const plan = new Plan();
  for (const name of await segments.names(scope)) {
    const segment = await segments.segment(scope, name);
    if (!segment) continue;
    for (const [id, raw] of segment.records) plan.set(keys.checkpoint(scope, id), raw).zAdd(keys.ids(scope), id);
    for (const [id, packed] of segment.writes) {
      const hot = await redis.hGet(keys.packedWrites(scope), id);
      plan.hSet(keys.packedWrites(scope), id, packEntries(withLaterWrites(packed, hot)));
    }
    for (const [field, frame] of segment.blobs) plan.hSet(keys.blobs(scope), field, frame);
  }
  return plan.unlink(keys.segments(scope));
}
