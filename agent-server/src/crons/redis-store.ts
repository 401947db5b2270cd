import type { RedisClient } from "../storage/redis-client.ts";
import { RedisScript } from "../storage/redis-script.ts";
import type { Cron } from "./schemas.ts";
import type { CronStore, DueSlot, SlotLease } from "./store.ts";

/**
 * Puts a slot in flight: a scheduled slot leaves the schedule, or an expired claim of the same
 * slot is taken over. Of several schedulers that saw the same due slot, exactly one gets 1.
 * KEYS: schedule zset, claims zset, cron hash. ARGV: cron id, slot ms, now ms, lease end ms, owner.
 */
const CLAIM = new RedisScript(`
local id, slot = ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', KEYS[3]) == 0 then
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  return 0
end
local held = redis.call('HGET', KEYS[3], 'claim_slot')
if held then
  if tonumber(held) ~= slot then return 0 end
  local lease = redis.call('ZSCORE', KEYS[2], id)
  if lease and tonumber(lease) > tonumber(ARGV[3]) then return 0 end
else
  local current = redis.call('ZSCORE', KEYS[1], id)
  if not current or tonumber(current) ~= slot then return 0 end
  redis.call('ZREM', KEYS[1], id)
end
redis.call('ZADD', KEYS[2], ARGV[4], id)
redis.call('HSET', KEYS[3], 'claim_slot', ARGV[2], 'claim_owner', ARGV[5], 'claim_until', ARGV[4])
return 1
`);

/**
 * Ends the claim of a slot whose run exists and schedules the cron's next slot, with
 * `next_run_date`, in the same step; 0 when that slot is not in flight.
 * KEYS: schedule zset, claims zset, cron hash. ARGV: cron id, slot ms, next ms ("" = unschedule), next ISO.
 */
const ACK = new RedisScript(`
local held = redis.call('HGET', KEYS[3], 'claim_slot')
if not held or tonumber(held) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HDEL', KEYS[3], 'claim_slot', 'claim_owner', 'claim_until')
redis.call('ZREM', KEYS[2], ARGV[1])
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1]) end
redis.call('HSET', KEYS[3], 'next_run_date', ARGV[4])
return 1
`);

const CLAIM_FIELDS = ["claim_slot", "claim_owner", "claim_until"];

/**
 * Replaces a cron that still exists (a PATCH racing a DELETE never brings it back) and
 * reschedules it, dropping any slot in flight. KEYS: cron hash, schedule zset, claims zset.
 * ARGV: cron id, record JSON, next run ISO ('' = none), next run ms ('' = unschedule). Returns 0
 * when the cron is gone.
 */
const UPDATE = new RedisScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'record', ARGV[2], 'next_run_date', ARGV[3])
redis.call('HDEL', KEYS[1], ${CLAIM_FIELDS.map((field) => `'${field}'`).join(", ")})
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[4] == '' then redis.call('ZREM', KEYS[2], ARGV[1]) else redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1]) end
return 1
`);

/**
 * Layout under the prefix: `cron:<id>` hash (`record` JSON without next_run_date, `next_run_date`,
 * and while a slot is in flight `claim_slot`, `claim_owner`, `claim_until`), `crons` set of every
 * id, `crons:schedule` zset of enabled ids by next run (ms), `crons:claims` zset of ids with a
 * slot in flight by lease end (ms).
 */
export class RedisCronStore implements CronStore {
  readonly #redis: RedisClient;
  readonly #all: string;
  readonly #schedule: string;
  readonly #claims: string;
  readonly #prefix: string;

  constructor(redis: RedisClient, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#all = `${prefix}crons`;
    this.#schedule = `${prefix}crons:schedule`;
    this.#claims = `${prefix}crons:claims`;
  }

  #key(cronId: string): string {
    return `${this.#prefix}cron:${cronId}`;
  }

  async save(cron: Cron): Promise<void> {
    const { next_run_date, ...record } = cron;
    const key = this.#key(cron.cron_id);
    const multi = this.#redis
      .multi()
      .hSet(key, { record: JSON.stringify(record), next_run_date: next_run_date ?? "" })
      .hDel(key, CLAIM_FIELDS)
      .zRem(this.#claims, cron.cron_id)
      .sAdd(this.#all, cron.cron_id);
    if (next_run_date === null) multi.zRem(this.#schedule, cron.cron_id);
    else multi.zAdd(this.#schedule, { score: Date.parse(next_run_date), value: cron.cron_id });
    await multi.exec();
  }

  async update(cron: Cron): Promise<boolean> {
    const { next_run_date, ...record } = cron;
    const next = next_run_date === null ? "" : String(Date.parse(next_run_date));
    const keys = [this.#key(cron.cron_id), this.#schedule, this.#claims];
    const args = [cron.cron_id, JSON.stringify(record), next_run_date ?? "", next];
    return (await UPDATE.run(this.#redis, keys, args)) === 1;
  }

  async get(cronId: string): Promise<Cron | undefined> {
    return parseCron(await this.#redis.hGetAll(this.#key(cronId)));
  }

  async delete(cronId: string): Promise<boolean> {
    const [deleted] = await this.#redis
      .multi()
      .del(this.#key(cronId))
      .sRem(this.#all, cronId)
      .zRem(this.#schedule, cronId)
      .zRem(this.#claims, cronId)
      .exec();
    return Number(deleted) > 0;
  }

  async all(): Promise<Cron[]> {
    const ids = await this.#redis.sMembers(this.#all);
    if (ids.length === 0) return [];
    const multi = this.#redis.multi();
    for (const id of ids) multi.hGetAll(this.#key(id));
    const hashes = (await multi.exec()) as unknown as Record<string, string>[];
    return hashes.map(parseCron).filter((cron): cron is Cron => cron !== undefined);
  }

  async due(now: number, limit: number): Promise<DueSlot[]> {
    const [scheduled, expired] = await Promise.all([
      this.#redis.zRangeByScoreWithScores(this.#schedule, "-inf", now, { LIMIT: { offset: 0, count: limit } }),
      this.#redis.zRangeByScore(this.#claims, "-inf", now, { LIMIT: { offset: 0, count: limit } }),
    ]);
    const due = scheduled.map(({ value, score }) => ({ cronId: value, slot: score }));
    if (expired.length === 0) return due;
    const multi = this.#redis.multi();
    for (const cronId of expired) multi.hGet(this.#key(cronId), "claim_slot");
    const slots = (await multi.exec()) as unknown as (string | null)[];
    // A claim whose slot field is gone was just acknowledged or dropped: nothing is due.
    const retried = expired.flatMap((cronId, i) => (slots[i] ? [{ cronId, slot: Number(slots[i]) }] : []));
    return [...retried, ...due].slice(0, limit);
  }

  async claim(cronId: string, slot: number, lease: SlotLease): Promise<boolean> {
    const claimed = await CLAIM.run(
      this.#redis,
      [this.#schedule, this.#claims, this.#key(cronId)],
      [cronId, String(slot), String(lease.now), String(lease.until), lease.owner],
    );
    return Number(claimed) === 1;
  }

  async ack(cronId: string, slot: number, next: number | null): Promise<boolean> {
    const acked = await ACK.run(
      this.#redis,
      [this.#schedule, this.#claims, this.#key(cronId)],
      [cronId, String(slot), next === null ? "" : String(next), next === null ? "" : new Date(next).toISOString()],
    );
    return Number(acked) === 1;
  }
}

function parseCron(hash: Record<string, string>): Cron | undefined {
  if (!hash.record) return undefined;
  return { ...(JSON.parse(hash.record) as Omit<Cron, "next_run_date">), next_run_date: hash.next_run_date || null };
}
