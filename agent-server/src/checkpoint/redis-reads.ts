import type { RedisCheckpointer } from "./redis.ts";
import { pairs } from "./redis-codec.ts";
import { blobClosureScript } from "./redis-layout.ts";
import { readRecordsScript, readWritesScript } from "./redis-lua.ts";
import type { RawRecord } from "./redis-record.ts";

/**
 * Reads outside `RedisCheckpointer`'s own methods: the id pages `list` walks, and what the
 * whole-thread changes (`redis-threads.ts`) and packing (`redis-segment-pack.ts`) share.
 */

/** Checkpoint ids a page of `list` reads at most. */
export const LIST_PAGE = 64;

/** Checkpoint ids of a scope, newest first, below `beforeId`, in pages of `pageSize`. */
export async function* checkpointIds(
  saver: RedisCheckpointer,
  scope: string,
  beforeId?: string,
  onlyId?: string,
  pageSize = LIST_PAGE,
): AsyncGenerator<string[]> {
  if (onlyId) {
    if (beforeId === undefined || onlyId < beforeId) yield [onlyId];
    return;
  }
  let upper = beforeId ? `(${beforeId}` : "+";
  const count = Math.min(pageSize, LIST_PAGE);
  const yielded = new Set<string>();
  for (let more = true; more; ) {
    const page = (await saver.redis.sendCommand([
      "ZRANGE",
      saver.keys.ids(scope),
      upper,
      "-",
      "BYLEX",
      "REV",
      "LIMIT",
      "0",
      String(count),
    ])) as Buffer[];
    const ids = page.map((id) => id.toString());
    for (const id of ids) yielded.add(id);
    if (ids.length > 0) yield ids;
    more = ids.length === count;
    upper = `(${ids[ids.length - 1]}`;
  }
  // Older checkpoints are in cold segments, each older than every hot one. One packed while
  // this walked the hot ones is in both.
  for await (const ids of saver.cold.ids(scope, beforeId)) {
    const unseen = ids.filter((id) => !yielded.has(id));
    for (let start = 0; start < unseen.length; start += count) yield unseen.slice(start, start + count);
  }
}

/** Members of a set or zset (index order), as strings. */
export async function members(
  redis: RedisCheckpointer["redis"],
  key: string,
  type: "set" | "zset" = "set",
): Promise<string[]> {
  const found = type === "set" ? await redis.sMembers(key) : await redis.zRange(key, 0, -1);
  return found.map((member) => member.toString());
}

/** The pending writes of a checkpoint (either layout) as field/frame pairs, in the order they were stored. */
export async function readWrites(saver: RedisCheckpointer, scope: string, id: string) {
  const keys = [saver.keys.writes(scope, id), saver.keys.packedWrites(scope)];
  return pairs((await readWritesScript.run(saver.redis, keys, [id])) as Buffer[]);
}

/** Checkpoint records (either layout) at `keys`, in one call. */
export async function readRecords(saver: RedisCheckpointer, keys: string[]): Promise<RawRecord[]> {
  return keys.length === 0 ? [] : ((await readRecordsScript.run(saver.redis, keys, [])) as RawRecord[]);
}

/** `fields` plus the fields their deltas are built on: the channel versions to keep for them to stay readable. */
export async function withDeltaBases(
  saver: RedisCheckpointer,
  scope: string,
  fields: Iterable<string>,
): Promise<Set<string>> {
  const given = [...fields];
  if (given.length === 0) return new Set();
  const closure = (await blobClosureScript.run(saver.redis, [saver.keys.blobs(scope)], given)) as Buffer[];
  return new Set(closure.map(String));
}
