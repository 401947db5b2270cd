import { createHash, randomBytes } from "node:crypto";
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { RESP_TYPES } from "redis";
import { LruCache } from "../../storage/lru-cache.ts";
import type { RedisClient } from "../../storage/redis-client.ts";
import { RedisScript } from "../../storage/redis-script.ts";

/**
 * Archived run records (issue #21). A run's record is a hash whose `json` (the run as created:
 * ids, metadata, kwargs with the input, ~1 KB) makes it a hash table in Redis, ~1.6 KiB a run
 * kept for the thread's life. Once a thread has `hot + batch` runs past its last archive, the
 * finished ones but the latest `hot` give their `json` to one deflated archive, a field of
 * `arc:<thread>`, and keep the small fields (status, times, attempt, thread) plus `arc`, the
 * archive's name: ~0.3 KiB a run with its share of the archive. Records of one thread are alike,
 * so together they deflate ~10×. A run's `json` never changes once created, so an archived one
 * reads the same; a deleted run is taken out of its archive.
 */

export interface ArchiveLimits {
  /** The latest runs of a thread that keep their `json`. */
  hot: number;
  /** Runs archived at once. */
  batch: number;
}

export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { hot: 8, batch: 32 };

const FINAL = `local final = {success = true, error = true, timeout = true, interrupted = true}`;

/**
 * ARGV: p, thread id, archive name, archive, run ids. Moves the runs' `json` into the archive and
 * their ids from the thread's runs (`tr:`) to it, only while each still has its `json` and is
 * finished (another process archiving them, or a delete, makes it give up). Returns 1, or 0 when
 * it gave up.
 */
const ARCHIVE = new RedisScript(`${FINAL}
local p = ARGV[1]
for i = 5, #ARGV do
  local rk = p..'run:'..ARGV[i]
  if redis.call('HEXISTS', rk, 'json') == 0 or not final[redis.call('HGET', rk, 'status')] then return 0 end
end
redis.call('HSET', p..'arc:'..ARGV[2], ARGV[3], ARGV[4])
for i = 5, #ARGV do
  local rk = p..'run:'..ARGV[i]
  -- Written anew with what the scripts read of a finished run (delete, cancel): a hash that once
  -- held the json stays a hash table (~4× the memory) after HDEL. Its updated_at is archived.
  local kept = redis.call('HMGET', rk, 'status', 'thread_id')
  redis.call('DEL', rk)
  redis.call('HSET', rk, 'status', kept[1], 'thread_id', kept[2], 'arc', ARGV[3])
  redis.call('ZREM', p..'tr:'..ARGV[2], ARGV[i])
end
return 1
`);

/**
 * KEYS: the thread's archives. ARGV: archive name, SHA-1 of the archive as read, the archive
 * without the deleted run ('' when it was the last). Returns 0 when the archive changed since it
 * was read.
 */
const REWRITE = new RedisScript(`
if redis.sha1hex(redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[2] then return 0 end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) end
return 1
`);

const encode = (runs: Map<string, string>) =>
  deflateRawSync(`{${[...runs].map(([id, json]) => `${JSON.stringify(id)}:${json}`).join(",")}}`, { level: 9 });

function decode(archive: Buffer): Map<string, string> {
  const runs = JSON.parse(inflateRawSync(archive).toString()) as Record<string, unknown>;
  return new Map(Object.entries(runs).map(([id, run]) => [id, JSON.stringify(run)]));
}

/** Decoded archives a process keeps. */
const CACHED_ARCHIVES = 64;
/** A rewrite racing another gives up and reads again, this many times. */
const MAX_REWRITES = 20;

export class RunArchive {
  readonly #redis: RedisClient;
  /** The same connection, replying with bytes: archives are deflated. */
  readonly #binary: ReturnType<typeof binaryClient>;
  readonly #prefix: string;
  readonly #limits: ArchiveLimits;
  /** Decoded archives this process read. */
  readonly #cache = new LruCache<Map<string, string>>(CACHED_ARCHIVES);
  readonly #archiving = new Set<string>();

  constructor(redis: RedisClient, prefix: string, limits: ArchiveLimits) {
    this.#redis = redis;
    this.#binary = binaryClient(redis);
    this.#prefix = prefix;
    this.#limits = limits;
  }

  /** Runs in a thread's `tr:` (not archived) from which archiving starts. */
  get due(): number {
    return this.#limits.hot + this.#limits.batch;
  }

  #key(threadId: string): string {
    return `${this.#prefix}arc:${threadId}`;
  }

  /** An archived run's `json` (with its `updated_at`), undefined when its archive no longer has it. */
  async json(threadId: string, name: string, runId: string): Promise<string | undefined> {
    return (await this.#runs(threadId, name))?.get(runId);
  }

  /** An archive's runs (id → json, in arrival order), decoded once per process. */
  async #runs(threadId: string, name: string): Promise<Map<string, string> | undefined> {
    const cacheKey = `${threadId}\n${name}`;
    const cached = this.#cache.get(cacheKey);
    if (cached) return cached;
    const archive = await this.#read(threadId, name);
    if (!archive) return undefined;
    const runs = decode(archive);
    this.#cache.set(cacheKey, runs);
    return runs;
  }

  async #read(threadId: string, name: string): Promise<Buffer | undefined> {
    return (await this.#binary.hGet(this.#key(threadId), name)) ?? undefined;
  }

  /** Archives the thread's older finished runs in the background; at most one at a time per thread. */
  archiveSoon(threadId: string): void {
    if (this.#archiving.has(threadId)) return;
    this.#archiving.add(threadId);
    // Off the run's path; one that gives up or fails leaves every record as it was, and the
    // thread's next finished run tries again.
    this.archive(threadId)
      .catch(() => false)
      .finally(() => this.#archiving.delete(threadId));
  }

  /** Archives the thread's finished runs but the latest `hot`, oldest first, up to the first unfinished one. */
  async archive(threadId: string): Promise<boolean> {
    const ids = await this.#redis.zRangeWithScores(`${this.#prefix}tr:${threadId}`, 0, -1);
    const candidates = ids.slice(0, Math.max(ids.length - this.#limits.hot, 0));
    if (candidates.length < this.#limits.batch) return false;
    const multi = this.#redis.multi();
    for (const { value } of candidates) multi.hmGet(`${this.#prefix}run:${value}`, ["json", "status", "updated_at"]);
    const records = (await multi.execAsPipeline()) as unknown as (string | null)[][];
    const runs = new Map<string, string>();
    let last = 0;
    for (const [i, [json, status, updatedAt]] of records.entries()) {
      if (!json || !status || !updatedAt || !["success", "error", "timeout", "interrupted"].includes(status)) break;
      const candidate = candidates[i] as { value: string; score: number };
      // A finished run's update time no longer changes: it goes with the record.
      runs.set(candidate.value, `${json.slice(0, -1)},"updated_at":${JSON.stringify(updatedAt)}}`);
      last = candidate.score;
    }
    if (runs.size < this.#limits.batch) return false;
    // Named by its last run's arrival, so names sort as the runs do.
    const name = `${String(last).padStart(16, "0")}-${randomBytes(4).toString("hex")}`;
    const args = [this.#prefix, threadId, name, encode(runs), ...runs.keys()];
    return (await ARCHIVE.run(this.#redis, [], args)) === 1;
  }

  /** Ids of the thread's archived runs, newest first. */
  async ids(threadId: string): Promise<string[]> {
    const names = (await this.#redis.hKeys(this.#key(threadId))).sort().reverse();
    const ids: string[] = [];
    for (const name of names) ids.push(...[...((await this.#runs(threadId, name))?.keys() ?? [])].reverse());
    return ids;
  }

  /** Takes a deleted run out of its archive (its input must not outlive it). */
  async forget(threadId: string, name: string, runId: string): Promise<void> {
    const key = this.#key(threadId);
    for (let attempt = 0; attempt < MAX_REWRITES; attempt++) {
      const archive = await this.#read(threadId, name);
      if (!archive) return;
      const runs = decode(archive);
      if (!runs.delete(runId)) return;
      const digest = createHash("sha1").update(archive).digest("hex");
      const rewritten = runs.size === 0 ? "" : encode(runs);
      if ((await REWRITE.run(this.#redis, [key], [name, digest, rewritten])) === 1) {
        this.#cache.delete(`${threadId}\n${name}`);
        return;
      }
    }
    throw new Error(`the archive of thread ${threadId} kept changing while run ${runId} was taken out of it`);
  }
}

const binaryClient = (redis: RedisClient) => redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
