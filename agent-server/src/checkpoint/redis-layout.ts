import { RedisScript } from "../storage/redis-script.ts";
import { BASE_OF, CHAIN_GUARD, LEASE_FENCE, PACKED_WRITES, READ_RECORD, READ_WRITES } from "./redis-lua.ts";

/**
 * Redis layout of the checkpointer. A "scope" is one (thread, namespace) pair, written as
 * `JSON.stringify([thread_id, checkpoint_ns])` so no id can collide with another. Per scope:
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<p>cp:c:<scope>:<id>` | string | the checkpoint's record, packed: the blob fields it reads, then its checkpoint (without channel_values) and metadata, compressed (`redis-record.ts`); a hash `checkpoint`, `type`, `metadata`, `metadata_type`, `parent`, `blobs` when written before |
 * | `<p>cp:ids:<scope>` | zset, score 0 | checkpoint ids (uuid6: lexicographic = time order) |
 * | `<p>cp:blobs:<scope>` | hash | `<channel>\n<version>` → frame `{type}` + serde bytes, one per channel version (shared by checkpoints); or a delta: frame `{type,base,prefix,suffix}` + the bytes between the `prefix` and `suffix` kept from the `base` field's value (`deltas.ts`); `"z":1` in the header: the payload is deflated (`redis-pack.ts`). A channel left empty has no field |
 * | `<p>cp:w:<scope>:<id>` | hash | pending writes stored before `cp:wp`, read along with it: `<task_id>\0<idx>` → frame `{channel,type,task_path}` + serde bytes |
 * | `<p>cp:wp:<scope>` | hash | `<checkpoint id>` → the checkpoint's pending writes, each `<length>:<task_id>\0<idx><length>:<frame>` (frame as in `cp:w`) |
 * | `<p>cp:wids:<scope>` | set | checkpoint ids that have writes in `cp:w` keys (so deleting never needs a SCAN) |
 * | `<p>cp:seg:<scope>` | hash | cold segments: `<first id> <last id> <tag>` → the records, pending writes and channel versions of old checkpoints, deflated together (`redis-segments.ts`); their ids are no longer in `cp:ids` |
 *
 * Per thread `<p>cp:ns:<thread_id>` (set of scopes) and `<p>cp:v:<thread_id>` (a counter every write
 * of the thread increments: whole-thread changes apply only while it is what they read,
 * `redis-plan.ts`), and globally `<p>cp:threads` (set of thread ids).
 */
export class CheckpointKeys {
  readonly base: string;

  constructor(prefix: string) {
    this.base = `${prefix}cp:`;
  }

  threads(): string {
    return `${this.base}threads`;
  }

  scopesOf(threadId: string): string {
    return `${this.base}ns:${threadId}`;
  }

  /** The thread's change counter. */
  changes(threadId: string): string {
    return `${this.base}v:${threadId}`;
  }

  checkpoint(scope: string, checkpointId: string): string {
    return `${this.base}c:${scope}:${checkpointId}`;
  }

  checkpointPrefix(scope: string): string {
    return `${this.base}c:${scope}:`;
  }

  ids(scope: string): string {
    return `${this.base}ids:${scope}`;
  }

  blobs(scope: string): string {
    return `${this.base}blobs:${scope}`;
  }

  writes(scope: string, checkpointId: string): string {
    return `${this.base}w:${scope}:${checkpointId}`;
  }

  writesPrefix(scope: string): string {
    return `${this.base}w:${scope}:`;
  }

  /** Pending writes of every checkpoint of the scope, a field per checkpoint (`packEntries`). */
  packedWrites(scope: string): string {
    return `${this.base}wp:${scope}`;
  }

  writeIds(scope: string): string {
    return `${this.base}wids:${scope}`;
  }

  /** Cold segments of the scope (`redis-segments.ts`). */
  segments(scope: string): string {
    return `${this.base}seg:${scope}`;
  }
}

export function scopeOf(threadId: string, checkpointNs: string): string {
  return JSON.stringify([threadId, checkpointNs]);
}

export function namespaceOfScope(scope: string): string {
  return (JSON.parse(scope) as [string, string])[1];
}

export function blobField(channel: string, version: number | string): string {
  return `${channel}\n${version}`;
}

export function channelOfBlobField(field: string): string {
  return field.slice(0, field.lastIndexOf("\n"));
}

export function writeField(taskId: string, idx: number): string {
  return `${taskId}\0${idx}`;
}

export function parseWriteField(field: string): { taskId: string; idx: number } {
  const separator = field.lastIndexOf("\0");
  return { taskId: field.slice(0, separator), idx: Number(field.slice(separator + 1)) };
}

/** A JSON header line followed by raw bytes: keeps serde output binary, no base64. */
export function encodeFrame(header: object, payload: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`${JSON.stringify(header)}\n`), payload]);
}

/** The field of the version a chain stopped at because the reader has it (`loadTupleScript`), if it did. */
export function heldBaseOf(frame: Buffer | undefined): string | undefined {
  return frame?.[0] === 0 ? frame.subarray(1).toString() : undefined;
}

export function decodeFrame<Header>(frame: Buffer): { header: Header; payload: Buffer } {
  const newline = frame.indexOf(10);
  return { header: JSON.parse(frame.subarray(0, newline).toString()) as Header, payload: frame.subarray(newline + 1) };
}

/**
 * Stores a checkpoint in one call. KEYS: blobs, checkpoint record, ids, scopes of the thread,
 * threads, the thread's change counter, then for a run's write its record and its thread's lock
 * (the lease fence). ARGV: the run id ('' for none) and attempt of the fence, scope, thread id,
 * checkpoint id, number of blobs, then per blob its field, frame and the field a delta frame
 * applies to ('' for a full copy), then the packed record (`redis-record.ts`). A stored channel
 * version never changes (like the Postgres saver's ON CONFLICT DO NOTHING); the record is
 * replaced whole. When the base of a new delta is gone (the thread was pruned, deleted or rolled
 * back since this process saw it), nothing is written and the fields of those deltas are
 * returned, to be sent again as full copies; else the number of checkpoints the scope now holds
 * in its keys (`cp:ids`).
 */
export const putCheckpointScript = new RedisScript(`${LEASE_FENCE}
fence(KEYS[7], KEYS[8], ARGV[1], ARGV[2])
local count = tonumber(ARGV[6])
local missing = {}
local i = 7
for _ = 1, count do
  local base = ARGV[i + 2]
  if base ~= '' and redis.call('HEXISTS', KEYS[1], base) == 0 and redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then
    missing[#missing + 1] = ARGV[i]
  end
  i = i + 3
end
if #missing > 0 then return missing end
i = 7
for _ = 1, count do
  redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
  i = i + 3
end
redis.call('SET', KEYS[2], ARGV[i])
redis.call('ZADD', KEYS[3], 0, ARGV[5])
redis.call('SADD', KEYS[4], ARGV[3])
redis.call('SADD', KEYS[5], ARGV[4])
redis.call('INCR', KEYS[6])
return redis.call('ZCARD', KEYS[3])
`);

/**
 * Stores a task's pending writes in one call, in the checkpoint's field of the scope's packed
 * writes. KEYS: the scope's packed writes, scopes of the thread, threads, the thread's change
 * counter, then the lease fence's keys (as `putCheckpointScript`). ARGV: the fence's run id (''
 * for none) and attempt, checkpoint id, scope, thread id, then per write 'replace' or 'keep'
 * (special writes replace, regular ones are written once), its field and its frame.
 */
export const putWritesScript = new RedisScript(`${LEASE_FENCE}${PACKED_WRITES}
fence(KEYS[5], KEYS[6], ARGV[1], ARGV[2])
local list = unpackWrites(redis.call('HGET', KEYS[1], ARGV[3]) or nil)
local at = {}
for i, entry in ipairs(list) do at[entry[1]] = i end
for i = 6, #ARGV, 3 do
  local field, frame = ARGV[i + 1], ARGV[i + 2]
  if not at[field] then
    list[#list + 1] = {field, frame}
    at[field] = #list
  elseif ARGV[i] == 'replace' then
    list[at[field]][2] = frame
  end
end
redis.call('HSET', KEYS[1], ARGV[3], packWrites(list))
redis.call('SADD', KEYS[2], ARGV[4])
redis.call('SADD', KEYS[3], ARGV[5])
redis.call('INCR', KEYS[4])
return 1
`);

/**
 * One round trip for a checkpoint tuple: resolves the latest id when none is given (the last
 * member of the id zset, O(log n)), then reads the record, its writes and the blobs it names,
 * each with the chain of frames it is a delta against. KEYS: ids zset, blobs hash, packed writes. ARGV:
 * checkpoint id or "", record key prefix, writes key prefix, then the blob fields the reader
 * already has (decoded: sent as one empty frame). Returns false or {id, record (`RawRecord`), writes
 * (flat hash), per blob its frames newest first (the last one a full copy; none when the version
 * is missing)}. A chain that reaches a version the reader has stops there: its last frame is then
 * a NUL byte and that version's field (`heldBaseOf`), which no frame starts with.
 */
export const loadTupleScript = new RedisScript(`${BASE_OF}${READ_RECORD}${READ_WRITES}
local id = ARGV[1]
if id == "" then
  local latest = redis.call("ZRANGE", KEYS[1], -1, -1)
  if #latest == 0 then return false end
  id = latest[1]
end
local record, blobs = readRecord(ARGV[2] .. id)
if not record then return false end
local known = {}
for i = 4, #ARGV do known[ARGV[i]] = true end
local chains = {}
if blobs and blobs ~= "" then
  for field in string.gmatch(blobs, "[^%z]+") do
    local chain = {}
    local link = field
    if known[field] and redis.call("HEXISTS", KEYS[2], field) == 1 then
      chain = {""}
      link = nil
    end
    for _ = 1, ${CHAIN_GUARD} do
      if not link then break end
      local frame = redis.call("HGET", KEYS[2], link)
      if not frame then chain = {} break end
      chain[#chain + 1] = frame
      link = baseOf(frame)
      if link and known[link] and redis.call("HEXISTS", KEYS[2], link) == 1 then
        chain[#chain + 1] = "\0" .. link
        link = nil
      end
    end
    chains[#chains + 1] = chain
  end
end
return {id, record, readWrites(ARGV[3] .. id, KEYS[3], id), chains}
`);

/**
 * The given blob fields plus every field their deltas are built on, transitively: what must be
 * kept for them to stay readable. KEYS: blobs hash. ARGV: fields. Returns the fields.
 */
export const blobClosureScript = new RedisScript(`${BASE_OF}
local seen = {}
local result = {}
for _, field in ipairs(ARGV) do
  local link = field
  for _ = 1, ${CHAIN_GUARD} do
    if seen[link] then break end
    seen[link] = true
    result[#result + 1] = link
    local frame = redis.call("HGET", KEYS[1], link)
    if not frame then break end
    link = baseOf(frame)
    if not link then break end
  end
end
return result
`);

/**
 * Deletes every key of a thread atomically, walking its scope set; the change counter stays a
 * while (ARGV[3] seconds), so a whole-thread change planned before the delete fails.
 * KEYS: the thread's scope set, the thread set, its change counter. ARGV: key base (`<p>cp:`),
 * thread id, seconds.
 */
export const deleteThreadScript = new RedisScript(`
local base = ARGV[1]
for _, scope in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  for _, id in ipairs(redis.call("ZRANGE", base .. "ids:" .. scope, 0, -1)) do
    redis.call("UNLINK", base .. "c:" .. scope .. ":" .. id)
  end
  for _, id in ipairs(redis.call("SMEMBERS", base .. "wids:" .. scope)) do
    redis.call("UNLINK", base .. "w:" .. scope .. ":" .. id)
  end
  redis.call("UNLINK", base .. "ids:" .. scope, base .. "wids:" .. scope, base .. "blobs:" .. scope, base .. "wp:" .. scope)
  redis.call("UNLINK", base .. "seg:" .. scope)
end
redis.call("UNLINK", KEYS[1])
redis.call("SREM", KEYS[2], ARGV[2])
redis.call("INCR", KEYS[3])
redis.call("EXPIRE", KEYS[3], ARGV[3])
return 1
`);

/**
 * What copying a thread reads, in one step: KEYS: the thread's scope set, its change counter.
 * ARGV: key base. Returns {counter or false, per scope {scope, checkpoint ids, ids with writes,
 * each legacy record's metadata and metadata type ('' when missing, and for a packed record: its
 * thread id needs no rewriting)}}.
 */
export const copySnapshotScript = new RedisScript(`
local base = ARGV[1]
local scopes = {}
for _, scope in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  local ids = redis.call("ZRANGE", base .. "ids:" .. scope, 0, -1)
  local metadata, types = {}, {}
  for i, id in ipairs(ids) do
    local key = base .. "c:" .. scope .. ":" .. id
    metadata[i], types[i] = "", ""
    if redis.call("TYPE", key).ok == "hash" then
      local record = redis.call("HMGET", key, "metadata", "metadata_type")
      metadata[i] = record[1] or ""
      types[i] = record[2] or ""
    end
  end
  scopes[#scopes + 1] = {scope, ids, redis.call("SMEMBERS", base .. "wids:" .. scope), metadata, types}
end
return {redis.call("GET", KEYS[2]), scopes}
`);
