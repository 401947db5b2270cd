import { RedisScript } from "../storage/redis-script.ts";

/**
 * Lua pieces the checkpointer's scripts (`redis-layout.ts`) share: reading a record in either
 * layout, a checkpoint's packed pending writes, the lease fence; and the scripts that only read
 * with them.
 */

/** The fields of a checkpoint record written before records were packed strings (`redis-record.ts`). */
const LEGACY_FIELDS = ["checkpoint", "type", "metadata", "metadata_type", "parent", "blobs"];

/** Lua: `record` (either layout) at `key`, and its blob list; the record is false when missing. */
export const READ_RECORD = `
local function readRecord(key)
  if redis.call("TYPE", key).ok == "string" then
    local value = redis.call("GET", key)
    local newline = string.find(value, "\\n", 1, true)
    local length = tonumber(string.sub(value, 1, newline - 1))
    return value, string.sub(value, newline + 1, newline + length)
  end
  local record = redis.call("HMGET", key, "${LEGACY_FIELDS.join('", "')}")
  if not record[1] then return false, nil end
  return record, record[6]
end
`;

/** The records at KEYS, each as `RawRecord`. */
export const readRecordsScript = new RedisScript(`${READ_RECORD}
local result = {}
for i, key in ipairs(KEYS) do
  local record = readRecord(key)
  result[i] = record
end
return result
`);

/**
 * Lua: refuses the write (an error reply) when a run's attempt no longer holds its lease: the
 * run's record says another attempt, or its thread's lock names another run (the run queue's
 * `RENEW` reads the same two keys). `runId` '' = the write belongs to no run, unfenced.
 */
export const LEASE_FENCE = `
local function fence(runKey, lockKey, runId, attempt)
  if runId == '' then return end
  if redis.call('HGET', runKey, 'attempt') ~= attempt or redis.call('GET', lockKey) ~= runId then
    error('LEASE_LOST run ' .. runId .. ' attempt ' .. attempt .. ' no longer holds its lease')
  end
end
`;

/**
 * Lua: a checkpoint's packed pending writes (`cp:wp`) as a list of {field, frame}, in the order
 * they were stored, and back. Entries are `<length>:<field><length>:<frame>`.
 */
export const PACKED_WRITES = `
local function unpackWrites(value)
  local list, pos = {}, 1
  while value and pos <= #value do
    local entry = {}
    for part = 1, 2 do
      local colon = string.find(value, ":", pos, true)
      local length = tonumber(string.sub(value, pos, colon - 1))
      entry[part] = string.sub(value, colon + 1, colon + length)
      pos = colon + length + 1
    end
    list[#list + 1] = entry
  end
  return list
end
local function packWrites(list)
  local parts = {}
  for _, entry in ipairs(list) do
    parts[#parts + 1] = #entry[1] .. ":" .. entry[1] .. #entry[2] .. ":" .. entry[2]
  end
  return table.concat(parts)
end
`;

/**
 * Lua: the pending writes of checkpoint `id` as a flat field/frame list: those in its `cp:w` key
 * (written before writes were packed), then those in the scope's packed hash.
 */
export const READ_WRITES = `${PACKED_WRITES}
local function readWrites(legacyKey, packedKey, id)
  local flat = redis.call("HGETALL", legacyKey)
  for _, entry in ipairs(unpackWrites(redis.call("HGET", packedKey, id) or nil)) do
    flat[#flat + 1] = entry[1]
    flat[#flat + 1] = entry[2]
  end
  return flat
end
`;

/** The pending writes of one checkpoint. KEYS: its `cp:w` key, the scope's packed writes. ARGV: its id. */
export const readWritesScript = new RedisScript(`${READ_WRITES}
return readWrites(KEYS[1], KEYS[2], ARGV[1])
`);

/**
 * Lua: the field a stored frame is a delta against, or nil for a full copy. Only delta headers
 * have a "base" key, so full copies (and frames written before deltas existed) skip the decode.
 */
export const BASE_OF = `
local function baseOf(frame)
  local newline = string.find(frame, "\\n", 1, true)
  local header = string.sub(frame, 1, newline - 1)
  if not string.find(header, '"base"', 1, true) then return nil end
  return cjson.decode(header).base
end
`;

/** A chain longer than this is corrupt (deltas are bounded far below it), not something to walk forever. */
export const CHAIN_GUARD = 1000;
