import { createHash } from "node:crypto";
import { RedisScript } from "../storage/redis-script.ts";
import type { Thread, ThreadStatus } from "../storage/types.ts";
import { type ThreadSortField, threadSortScore } from "./records.ts";

/**
 * Where a thread lives in Redis and which index entries it owns. Pure: the store turns the
 * difference between two records into one atomic script call. Every index is a sorted set whose
 * ties are ordered by id, exactly like the in-memory comparator, so any index can drive a page:
 *
 * - `thread:<id>`                        JSON record
 * - `threads:sort:<field>`               every thread, scored by `threadSortScore(field)`
 * - `threads:status:<status>:<field>`    the threads in one status, likewise per sort field, so a
 *                                        status filter pages in any order without intersecting
 * - `threads:meta:["<key>",<value>]`     threads per top-level scalar metadata value, scored by
 *                                        creation time (the default order)
 * - `threads:expiry`                     threads with a pending TTL, scored by expiry time
 */
export const SORT_FIELDS: readonly ThreadSortField[] = [
  "thread_id",
  "status",
  "created_at",
  "updated_at",
  "state_updated_at",
];

/** Longer scalars are still filterable, just not through an index. */
const MAX_INDEXED_VALUE_LENGTH = 200;

export interface ThreadKeys {
  record(threadId: string): string;
  sort(field: ThreadSortField): string;
  status(status: ThreadStatus, field: ThreadSortField): string;
  metadata(key: string, value: unknown): string;
  expiry: string;
}

export function threadKeys(prefix: string): ThreadKeys {
  return {
    record: (threadId) => `${prefix}thread:${threadId}`,
    sort: (field) => `${prefix}threads:sort:${field}`,
    status: (status, field) => `${prefix}threads:status:${status}:${field}`,
    metadata: (key, value) => `${prefix}threads:meta:${JSON.stringify([key, value])}`,
    expiry: `${prefix}threads:expiry`,
  };
}

export function isIndexedMetadataValue(value: unknown): boolean {
  const scalar = value === null || ["string", "number", "boolean"].includes(typeof value);
  return scalar && JSON.stringify(value).length <= MAX_INDEXED_VALUE_LENGTH;
}

/** What the indexes read of a record: everything but its values. */
export type IndexedThread = Omit<Thread, "values">;

/** Index key → the thread's score in it. */
export function indexEntries(keys: ThreadKeys, thread: IndexedThread): Map<string, number> {
  const entries = new Map<string, number>();
  for (const field of SORT_FIELDS) {
    const score = threadSortScore(thread, field);
    entries.set(keys.sort(field), score);
    entries.set(keys.status(thread.status, field), score);
  }
  const created = threadSortScore(thread, "created_at");
  for (const [key, value] of Object.entries(thread.metadata)) {
    if (isIndexedMetadataValue(value)) entries.set(keys.metadata(key, value), created);
  }
  if (thread.ttl?.expires_at) entries.set(keys.expiry, Date.parse(thread.ttl.expires_at));
  return entries;
}

export type IndexOp = { key: string; op: "zrem" } | { key: string; op: "zadd"; score: number };

/** The index writes that move a thread from `before` to `after` (either may be absent). */
export function indexOps(
  keys: ThreadKeys,
  before: IndexedThread | undefined,
  after: IndexedThread | undefined,
): IndexOp[] {
  const old = before ? indexEntries(keys, before) : new Map<string, number>();
  const next = after ? indexEntries(keys, after) : new Map<string, number>();
  const ops: IndexOp[] = [];
  for (const key of old.keys()) {
    if (!next.has(key)) ops.push({ key, op: "zrem" });
  }
  for (const [key, score] of next) {
    if (old.get(key) !== score) ops.push({ key, op: "zadd", score });
  }
  return ops;
}

/** Where the run queue keeps its keys, under the storage prefix (see runs/queue/redis-scripts.ts). */
export const runQueuePrefix = (prefix: string) => `${prefix}runs:`;

/**
 * What a write requires of the thread's runs, read from the run queue (`tq:<id>` pending,
 * `ta:<id>` running, `run:<id>` attempt) in the same step: `busy`, whether a run other than the
 * fenced one is in flight; `fence`, that this run's attempt still holds the thread's lock.
 */
export interface RunGuard {
  runs: string;
  busy?: boolean;
  fence?: { runId: string; attempt: number };
}

/** 1 written, 0 the record changed, 2 `busy` is wrong, 3 the fenced run lost its lease. */
export type CasResult = 0 | 1 | 2 | 3;

/**
 * Compare-and-set of the record plus its index writes, atomically, optionally guarded by the
 * thread's runs. KEYS[1] is the record, KEYS[2..] the index keys; ARGV = the SHA-1 (hex) of
 * the expected old JSON ('' = absent: sending the digest, not the record, halves what a write
 * sends), new JSON ('' = delete), thread id, run queue prefix ('' = no guard), required
 * busy ('1' | '0' | '' = either), fenced run id and attempt ('' = none), then per index key its
 * op and score.
 */
export const CAS_SCRIPT = new RedisScript(`
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '' then
  if current then return 0 end
elseif not current or redis.sha1hex(current) ~= ARGV[1] then return 0 end
local id, runs, fence = ARGV[3], ARGV[4], ARGV[6]
if runs ~= '' then
  local active = redis.call('GET', runs..'ta:'..id)
  if fence ~= '' and (active ~= fence or redis.call('HGET', runs..'run:'..fence, 'attempt') ~= ARGV[7]) then
    return 3
  end
  local busy = redis.call('LLEN', runs..'tq:'..id) > 0 or (active and active ~= fence)
  if ARGV[5] ~= '' and (busy and '1' or '0') ~= ARGV[5] then return 2 end
end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
for i = 2, #KEYS do
  if ARGV[2 * i + 4] == 'zadd' then redis.call('ZADD', KEYS[i], ARGV[2 * i + 5], id)
  else redis.call('ZREM', KEYS[i], id) end
end
return 1
`);

export function casArguments(
  keys: ThreadKeys,
  threadId: string,
  oldJson: string,
  newJson: string,
  ops: IndexOp[],
  guard?: RunGuard,
): { keys: string[]; args: string[] } {
  const expected = oldJson === "" ? "" : createHash("sha1").update(oldJson).digest("hex");
  const busy = guard?.busy === undefined ? "" : guard.busy ? "1" : "0";
  const fence = guard?.fence;
  const args = [expected, newJson, threadId, guard?.runs ?? "", busy, fence?.runId ?? "", String(fence?.attempt ?? "")];
  for (const op of ops) args.push(op.op, op.op === "zadd" ? String(op.score) : "");
  return { keys: [keys.record(threadId), ...ops.map((op) => op.key)], args };
}

/**
 * One page of a filtered sort order, found by walking the sorted set (KEYS[1]) in order and
 * keeping ids that are in every other index (KEYS[2..]): cheap when matches are dense. ARGV: offset,
 * limit, '1' for descending, most entries to walk. Returns the page, or false when it walked
 * that many entries without filling the page (the caller then intersects instead).
 */
export const SCAN_PAGE_SCRIPT = new RedisScript(`
local skip, want, rev, budget = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local page, pos, chunk = {}, 0, math.min(256, budget)
local size = redis.call('ZCARD', KEYS[1])
while pos < size do
  if pos >= budget then return false end
  local ids
  if rev then ids = redis.call('ZRANGE', KEYS[1], pos, pos + chunk - 1, 'REV')
  else ids = redis.call('ZRANGE', KEYS[1], pos, pos + chunk - 1) end
  for _, id in ipairs(ids) do
    local member = true
    for k = 2, #KEYS do
      if not redis.call('ZSCORE', KEYS[k], id) then member = false; break end
    end
    if member then
      if skip > 0 then skip = skip - 1
      else
        page[#page + 1] = id
        if #page >= want then return page end
      end
    end
  end
  pos = pos + chunk
end
return page
`);
