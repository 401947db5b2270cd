import { RedisScript } from "../../storage/redis-script.ts";

/**
 * Lua scripts of the Redis run queue. Each is one atomic step that several processes may race
 * on. Key layout under the prefix `p`:
 *   run:<id>   hash: json (record without status; moved to an archive once the run is old: arc names it,
 *              redis-archive.ts), status, updated_at, attempt, start_at (due, ms), started_at (first claim, ms),
 *              thread_id, seq, cancel, arc
 *   arc:<tid>  hash: archive name (its last run's tr: score, a tag) -> deflated records of old finished runs
 *   tq:<tid>   list: pending run ids of the thread, FIFO
 *   ta:<tid>   string: id of the run executing on the thread (the per-thread lock)
 *   tr:<tid>   zset: the thread's run ids by arrival (but archived ones)
 *   ready      zset: thread ids with queued runs, scored by when the head run is due (ms)
 *   leases     zset: running run ids, scored by lease expiry (ms)
 *   inflight   zset: pending and running run ids by arrival
 *   ev:<id>    stream: the run's events (see stream/event-log.ts), closed atomically with the run's status
 *   wake       channel: published when work becomes available
 *   cancel     channel: "<run id> <action>" for the process executing the run
 */

/**
 * The keys that say whether an attempt of a run still holds its lease: the run's record
 * (`attempt`) and its thread's lock (`ta:`), read by `RENEW`, `FINISH` and the checkpointer's
 * writes (`checkpoint/redis-layout.ts`). `prefix` is the run queue's.
 */
export const leaseKeys = (prefix: string, runId: string, threadId: string): [string, string] => [
  `${prefix}run:${runId}`,
  `${prefix}ta:${threadId}`,
];

const common = `
local p = ARGV[1]
local function wake(tid, now)
  if redis.call('LLEN', p..'tq:'..tid) > 0 then
    redis.call('ZADD', p..'ready', now, tid)
    redis.call('PUBLISH', p..'wake', tid)
  end
end
`;

/**
 * ARGV: p, run id, thread id, json, now iso, start_at ms, reject-if-busy (1|0), claim lease ms
 * (0: queue only), the thread's record key ('' = unchecked). Returns 1 when queued, 3 when
 * claimed at once (due, thread free, a lease was asked for: the run is running with attempt 1 and
 * is not queued), 0 when busy, 2 when a run with that id exists (it is left as it is: creating a
 * given id is idempotent), or 4 when the thread is gone (deleted since the run was built).
 */
export const ENQUEUE = new RedisScript(`${common}
local rid, tid = ARGV[2], ARGV[3]
local q, a, rk = p..'tq:'..tid, p..'ta:'..tid, p..'run:'..rid
if redis.call('EXISTS', rk) == 1 then return 2 end
if (ARGV[9] or '') ~= '' and redis.call('EXISTS', ARGV[9]) == 0 then return 4 end
local idle = redis.call('LLEN', q) == 0 and redis.call('EXISTS', a) == 0
if ARGV[7] == '1' and not idle then return 0 end
local seq = redis.call('INCR', p..'seq')
redis.call('ZADD', p..'tr:'..tid, seq, rid)
redis.call('ZADD', p..'inflight', seq, rid)
local leaseMs = tonumber(ARGV[8])
if idle and leaseMs > 0 then
  local now = tonumber(ARGV[6])
  redis.call('HSET', rk, 'json', ARGV[4], 'status', 'running', 'updated_at', ARGV[5], 'attempt', 1,
    'start_at', now, 'started_at', now, 'thread_id', tid, 'seq', seq)
  redis.call('SET', a, rid)
  redis.call('ZADD', p..'leases', now + leaseMs, rid)
  return 3
end
redis.call('HSET', rk, 'json', ARGV[4], 'status', 'pending', 'updated_at', ARGV[5], 'attempt', 0,
  'start_at', ARGV[6], 'thread_id', tid, 'seq', seq)
redis.call('RPUSH', q, rid)
if redis.call('LLEN', q) == 1 then
  redis.call('ZADD', p..'ready', ARGV[6], tid)
else
  redis.call('ZADD', p..'ready', 'NX', ARGV[6], tid)
end
redis.call('PUBLISH', p..'wake', tid)
return 1
`);

/**
 * ARGV: p, now ms, lease ms, now iso. Returns {run id, attempt, json, first start ms, resumed 0|1,
 * when the next run is due (ms) or false}, or {false, when the next delayed run is due (ms) or
 * false} when nothing is due.
 */
export const CLAIM = new RedisScript(`${common}
local now = tonumber(ARGV[2])
for _ = 1, 50 do
  local due = redis.call('ZRANGEBYSCORE', p..'ready', '-inf', now, 'LIMIT', 0, 1)
  if #due == 0 then
    local nextDue = redis.call('ZRANGE', p..'ready', 0, 0, 'WITHSCORES')
    return {false, nextDue[2] or false}
  end
  local tid = due[1]
  local q = p..'tq:'..tid
  local rid = redis.call('LINDEX', q, 0)
  if (not rid) or redis.call('EXISTS', p..'ta:'..tid) == 1 then
    redis.call('ZREM', p..'ready', tid)
  else
    local rk = p..'run:'..rid
    local startAt = tonumber(redis.call('HGET', rk, 'start_at') or '0')
    if redis.call('EXISTS', rk) == 0 then
      redis.call('LPOP', q)
    elseif startAt > now then
      redis.call('ZADD', p..'ready', startAt, tid)
    else
      redis.call('LPOP', q)
      redis.call('ZREM', p..'ready', tid)
      redis.call('SET', p..'ta:'..tid, rid)
      local attempt = redis.call('HINCRBY', rk, 'attempt', 1)
      redis.call('HSET', rk, 'status', 'running', 'updated_at', ARGV[4])
      redis.call('ZADD', p..'leases', now + tonumber(ARGV[3]), rid)
      local resumed = 1 - redis.call('HSETNX', rk, 'started_at', ARGV[2])
      local nextDue = redis.call('ZRANGE', p..'ready', 0, 0, 'WITHSCORES')
      return {rid, attempt, redis.call('HGET', rk, 'json'), redis.call('HGET', rk, 'started_at'), resumed,
        nextDue[2] or false}
    end
  end
end
return {false, now}
`);

/** ARGV: p, run id, attempt, expiry ms. Returns nil when the lease was lost, else the cancel action or ''. */
export const RENEW = new RedisScript(`${common}
local rk = p..'run:'..ARGV[2]
local tid = redis.call('HGET', rk, 'thread_id')
if (not tid) or redis.call('HGET', rk, 'attempt') ~= ARGV[3] or redis.call('GET', p..'ta:'..tid) ~= ARGV[2] then
  return nil
end
redis.call('ZADD', p..'leases', ARGV[4], ARGV[2])
return redis.call('HGET', rk, 'cancel') or ''
`);

/**
 * ARGV: p, run id, attempt, status or 'deleted', now iso, now ms, requeue (1|0), closing event
 * name, closing event data, seconds to keep the events, expire the record too (1|0, runs of
 * temporary threads). Frees the thread and wakes its next run; a final status and the closing
 * event are written together, so a waiter never sees one without the other. Returns 0 when the
 * lease was lost; for a run kept with a final status {1, thread id, runs of the thread not
 * archived yet} (`redis-archive.ts`), else 1.
 */
export const FINISH = new RedisScript(`${common}
local rid = ARGV[2]
local rk = p..'run:'..rid
local tid = redis.call('HGET', rk, 'thread_id')
if (not tid) or redis.call('HGET', rk, 'attempt') ~= ARGV[3] or redis.call('GET', p..'ta:'..tid) ~= rid then
  return 0
end
redis.call('DEL', p..'ta:'..tid)
redis.call('ZREM', p..'leases', rid)
if ARGV[7] == '1' then
  redis.call('HINCRBY', rk, 'attempt', -1)
  redis.call('HSET', rk, 'status', 'pending', 'updated_at', ARGV[5])
  redis.call('LPUSH', p..'tq:'..tid, rid)
else
  if ARGV[4] == 'deleted' then
    redis.call('DEL', rk)
    redis.call('ZREM', p..'tr:'..tid, rid)
  else
    redis.call('HSET', rk, 'status', ARGV[4], 'updated_at', ARGV[5])
    redis.call('HDEL', rk, 'cancel')
  end
  redis.call('ZREM', p..'inflight', rid)
  local ev = p..'ev:'..rid
  redis.call('XADD', ev, '0-*', 'event', ARGV[8], 'data', ARGV[9])
  redis.call('EXPIRE', ev, ARGV[10])
  redis.call('PUBLISH', ev, 'end')
  if ARGV[11] == '1' then
    redis.call('EXPIRE', rk, ARGV[10])
    redis.call('EXPIRE', p..'tr:'..tid, ARGV[10])
  end
end
wake(tid, tonumber(ARGV[6]))
if ARGV[7] ~= '1' and ARGV[4] ~= 'deleted' and ARGV[11] ~= '1' then
  return {1, tid, redis.call('ZCARD', p..'tr:'..tid)}
end
return 1
`);

/** ARGV: p, run id, action, now iso. Returns cancelled | signalled | finished | missing. */
export const CANCEL = new RedisScript(`${common}
local rid, action = ARGV[2], ARGV[3]
local rk = p..'run:'..rid
local status = redis.call('HGET', rk, 'status')
if not status then return 'missing' end
local tid = redis.call('HGET', rk, 'thread_id')
if status == 'pending' then
  redis.call('LREM', p..'tq:'..tid, 0, rid)
  redis.call('ZREM', p..'inflight', rid)
  if action == 'rollback' then
    redis.call('DEL', rk)
    redis.call('ZREM', p..'tr:'..tid, rid)
  else
    redis.call('HSET', rk, 'status', 'interrupted', 'updated_at', ARGV[4])
  end
  return 'cancelled'
elseif status == 'running' then
  redis.call('HSET', rk, 'cancel', action)
  redis.call('PUBLISH', p..'cancel', rid..' '..action)
  return 'signalled'
end
return 'finished'
`);

/**
 * ARGV: p, now ms, max attempts, now iso. Returns a flat list {run id, thread id, outcome,
 * attempt, …}; outcome `deleted` for a run whose rollback its dead worker never carried out.
 */
export const SWEEP = new RedisScript(`${common}
local now = tonumber(ARGV[2])
local out = {}
for _, rid in ipairs(redis.call('ZRANGEBYSCORE', p..'leases', '-inf', now, 'LIMIT', 0, 50)) do
  redis.call('ZREM', p..'leases', rid)
  local rk = p..'run:'..rid
  local tid = redis.call('HGET', rk, 'thread_id')
  if tid and redis.call('HGET', rk, 'status') == 'running' then
    if redis.call('GET', p..'ta:'..tid) == rid then redis.call('DEL', p..'ta:'..tid) end
    local attempt = tonumber(redis.call('HGET', rk, 'attempt'))
    local outcome = 'pending'
    local cancel = redis.call('HGET', rk, 'cancel')
    if cancel == 'rollback' then
      outcome = 'deleted'
    elseif cancel then
      outcome = 'interrupted'
    elseif attempt >= tonumber(ARGV[3]) then
      outcome = 'error'
    end
    if outcome == 'pending' then
      redis.call('HSET', rk, 'status', 'pending', 'updated_at', ARGV[4])
      redis.call('LPUSH', p..'tq:'..tid, rid)
    else
      -- A rolled-back run reads 'interrupted' until settleAbandoned has removed its checkpoints and record.
      redis.call('HSET', rk, 'status', outcome == 'deleted' and 'interrupted' or outcome, 'updated_at', ARGV[4])
      redis.call('HDEL', rk, 'cancel')
      redis.call('ZREM', p..'inflight', rid)
    end
    wake(tid, now)
    table.insert(out, rid)
    table.insert(out, tid)
    table.insert(out, outcome)
    table.insert(out, attempt)
  end
end
return out
`);

/**
 * ARGV: p, run id. Returns deleted | running | missing; for an archived run {deleted, archive
 * name, thread id}: the caller takes it out of the archive (`redis-archive.ts`).
 */
export const DELETE = new RedisScript(`${common}
local rid = ARGV[2]
local rk = p..'run:'..rid
local status = redis.call('HGET', rk, 'status')
if not status then return 'missing' end
if status == 'running' then return 'running' end
local tid = redis.call('HGET', rk, 'thread_id')
local archive = redis.call('HGET', rk, 'arc')
redis.call('LREM', p..'tq:'..tid, 0, rid)
redis.call('ZREM', p..'tr:'..tid, rid)
redis.call('ZREM', p..'inflight', rid)
redis.call('DEL', rk)
if archive then return {'deleted', archive, tid} end
return 'deleted'
`);
