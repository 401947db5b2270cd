import { randomUUID } from "node:crypto";
import { conflict } from "@agentplane/common";
import type { RedisClient } from "../storage/redis-client.ts";
import type {
  Page,
  RunFence,
  Thread,
  ThreadCreate,
  ThreadFilter,
  ThreadSearch,
  ThreadStore,
  ThreadUpdate,
} from "../storage/types.ts";
import type { CheckpointValues } from "../stream/references.ts";
import { compareThreads, matchesThread, newThread, type ThreadFields } from "./records.ts";
import {
  CAS_SCRIPT,
  type CasResult,
  casArguments,
  indexOps,
  isIndexedMetadataValue,
  type RunGuard,
  runQueuePrefix,
  SCAN_PAGE_SCRIPT,
  type ThreadKeys,
  threadKeys,
} from "./redis-index.ts";
import { indexPage } from "./redis-page.ts";
import { applyStoredUpdate, filterableValues, materialise, type StoredThread, ThreadValues } from "./redis-record.ts";

/** Intersections up to this size are computed whole… */
const SMALL_INTERSECTION = 2000;
/** …others are found by walking an index in order when that takes at most this many steps. */
const SCAN_BUDGET = 10_000;
const LOAD_CHUNK = 1000;
const MAX_CAS_ATTEMPTS = 50;

export type Paging = Pick<ThreadSearch, "sort_by" | "sort_order" | "offset" | "limit">;

/** Sorted sets to page through the intersection of: `driver` holds the requested order, `others` only filter. */
export interface Intersection {
  driver: string;
  others: string[];
}

/**
 * One page of an intersection found by walking the driver in order (cheap when matches are
 * dense); undefined when that walked `budget` entries without filling the page.
 */
export async function scanPage(
  client: RedisClient,
  { driver, others }: Intersection,
  paging: Paging,
  budget: number,
): Promise<string[] | undefined> {
  const page = await SCAN_PAGE_SCRIPT.run(
    client,
    [driver, ...others],
    [String(paging.offset), String(paging.limit), paging.sort_order === "desc" ? "1" : "0", String(budget)],
  );
  return Array.isArray(page) ? (page as string[]) : undefined;
}

/** The driver's scores, so the intersection keeps its order. */
const weighted = ({ driver, others }: Intersection) =>
  [{ key: driver, weight: 1 }, ...others.map((key) => ({ key, weight: 0 }))] as [{ key: string; weight: number }];

/** One page of an intersection computed whole (ZINTER): cheapest for small ones. */
export async function intersectPage(client: RedisClient, sets: Intersection, paging: Paging): Promise<string[]> {
  const ascending = await client.zInter(weighted(sets));
  const ordered = paging.sort_order === "desc" ? ascending.reverse() : ascending;
  return ordered.slice(paging.offset, paging.offset + paging.limit);
}

/** One page of an intersection stored under `scratch` (ZINTERSTORE), then deleted: for large, sparse ones. */
export async function storedIntersectPage(
  client: RedisClient,
  scratch: string,
  sets: Intersection,
  paging: Paging,
): Promise<string[]> {
  const [, ids] = await client
    .multi()
    .zInterStore(scratch, weighted(sets))
    .zRange(scratch, paging.offset, paging.offset + paging.limit - 1, {
      REV: paging.sort_order === "desc" ? true : undefined,
    })
    .del(scratch)
    .exec();
  return ids as unknown as string[];
}

/**
 * Threads as JSON strings, with sorted sets as indexes so status, top-level scalar
 * metadata and every sort order page through Redis without reading other threads. Each
 * write is a compare-and-set script over the record and its index entries, so concurrent
 * writers never leave an index pointing at a stale record. A run's final values stay in its
 * checkpoint: the record refers to it (see `redis-record.ts`).
 */
export class RedisThreadStore implements ThreadStore {
  private readonly client: RedisClient;
  private readonly prefix: string;
  private readonly keys: ThreadKeys;
  /** The run queue's key prefix: every write checks the thread's runs there (status, fencing). */
  private readonly runs: string;
  private readonly values: ThreadValues;
  /** The stored text of each thread this store returned: what a write based on it compares against. */
  private readonly stored = new WeakMap<Thread, string>();

  /** `checkpointValues`: where the values of records that refer to a checkpoint are read. */
  constructor(client: RedisClient, prefix: string, checkpointValues: CheckpointValues) {
    this.client = client;
    this.prefix = prefix;
    this.keys = threadKeys(prefix);
    this.runs = runQueuePrefix(prefix);
    this.values = new ThreadValues(checkpointValues);
  }

  async create(input: ThreadCreate): Promise<Thread> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const thread = newThread(input, new Date().toISOString());
      if ((await this.write(thread.thread_id, "", undefined, thread)) === 1) return this.read(JSON.stringify(thread));
      if (input.if_exists !== "do_nothing") throw conflict("Thread already exists");
      const existing = await this.get(thread.thread_id);
      if (existing) return existing;
    }
    throw new Error("thread create kept racing with deletes");
  }

  async get(threadId: string): Promise<Thread | undefined> {
    const raw = await this.client.get(this.keys.record(threadId));
    return raw === null ? undefined : this.read(raw);
  }

  /** The thread a stored record shows, remembered with the record's text. */
  private async read(raw: string): Promise<Thread> {
    const thread = await materialise(JSON.parse(raw) as StoredThread, this.values);
    this.stored.set(thread, raw);
    return thread;
  }

  /** The thread after a write: the values written are remembered, not read back. */
  private written(after: StoredThread, update: ThreadUpdate): Promise<Thread> {
    if (update.values_at && update.values) this.values.remember(update.values_at, update.values);
    else if (update.values_at && update.values_json) this.values.rememberJson(update.values_at, update.values_json);
    return this.read(JSON.stringify(after));
  }

  async update(threadId: string, update: ThreadUpdate, current?: Thread): Promise<Thread | undefined> {
    const written = await this.apply(threadId, update, current);
    return typeof written === "string" ? undefined : written;
  }

  updateByRun(threadId: string, update: ThreadUpdate, fence: RunFence, current?: Thread) {
    return this.apply(threadId, update, current, fence);
  }

  /**
   * Writes the update with `status` derived from the thread's runs: the script refuses a guess
   * about them that is wrong (the guess is flipped and the write retried, without a read).
   */
  private async apply(threadId: string, update: ThreadUpdate, current?: Thread, fence?: RunFence) {
    let known = current === undefined ? undefined : this.stored.get(current);
    // A fenced run is ending: most often nothing else is queued behind it.
    let busy = fence ? false : current?.status === "busy";
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const raw = known ?? (await this.client.get(this.keys.record(threadId)));
      known = undefined;
      if (raw === null) return "missing" as const;
      const before = JSON.parse(raw) as StoredThread;
      const after = applyStoredUpdate(before, update, new Date().toISOString(), busy);
      const result = await this.write(threadId, raw, before, after, { runs: this.runs, busy, fence });
      if (result === 1) return this.written(after, update);
      if (result === 3) return "lease-lost" as const;
      if (result === 2) {
        busy = !busy;
        known = raw;
      }
    }
    throw new Error(`thread ${threadId} is updated too concurrently`);
  }

  async delete(threadId: string): Promise<boolean> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const raw = await this.client.get(this.keys.record(threadId));
      if (raw === null) return false;
      if ((await this.write(threadId, raw, JSON.parse(raw) as StoredThread, undefined)) === 1) return true;
    }
    throw new Error(`thread ${threadId} is updated too concurrently`);
  }

  /**
   * Runs that started or ended since `expected` was read count as a change too. `expected` as
   * this store returned it; any other copy compares as inline JSON (unchanged only for such records).
   */
  async updateIfUnchanged(expected: Thread, update: ThreadUpdate): Promise<Thread | undefined> {
    const oldJson = this.stored.get(expected) ?? JSON.stringify(expected);
    const before = JSON.parse(oldJson) as StoredThread;
    const busy = expected.status === "busy";
    const after = applyStoredUpdate(before, update, new Date().toISOString(), busy);
    const result = await this.write(expected.thread_id, oldJson, before, after, { runs: this.runs, busy });
    return result === 1 ? this.written(after, update) : undefined;
  }

  async deleteIfUnchanged(expected: Thread): Promise<boolean> {
    const guard = { runs: this.runs, busy: false };
    const oldJson = this.stored.get(expected) ?? JSON.stringify(expected);
    return (await this.write(expected.thread_id, oldJson, JSON.parse(oldJson), undefined, guard)) === 1;
  }

  async search(query: ThreadSearch): Promise<Page<Thread>> {
    return this.find(query, query);
  }

  async count(filter: ThreadFilter): Promise<number> {
    return (await this.find(filter)).total;
  }

  async expired(now: Date, limit: number): Promise<string[]> {
    return this.client.zRangeByScore(this.keys.expiry, "-inf", now.getTime(), { LIMIT: { offset: 0, count: limit } });
  }

  private async write(
    threadId: string,
    oldJson: string,
    before?: StoredThread,
    after?: StoredThread,
    guard?: RunGuard,
  ): Promise<CasResult> {
    const newJson = after ? JSON.stringify(after) : "";
    const ops = indexOps(this.keys, before, after);
    const { keys, args } = casArguments(this.keys, threadId, oldJson, newJson, ops, guard);
    return (await CAS_SCRIPT.run(this.client, keys, args)) as CasResult;
  }

  /** Index-only when every filter has an index; otherwise candidates are read and checked. */
  private async find(filter: ThreadFilter, paging?: Paging): Promise<Page<Thread>> {
    const sortBy = paging?.sort_by ?? "created_at";
    const filters = filter.status ? [this.keys.status(filter.status, sortBy)] : [];
    let residual = Boolean(filter.ids) || Object.keys(filter.values ?? {}).length > 0 || filter.auth !== undefined;
    for (const [key, value] of Object.entries(filter.metadata ?? {})) {
      if (isIndexedMetadataValue(value)) filters.push(this.keys.metadata(key, value));
      else residual = true;
    }
    if (residual) return this.findByScan(filter, filters, paging);

    // Indexes already in the requested order: the status one, and metadata ones (creation order).
    const ordered = filters.filter((key, i) => (filter.status && i === 0) || sortBy === "created_at");
    const drivers = ordered.length > 0 ? ordered : [this.keys.sort(sortBy)];
    const [only] = drivers;
    if (paging && only && drivers.length === 1 && filters.every((key) => key === only)) {
      const page = await indexPage(this.client, only, this.keys.record(""), paging);
      return { items: await Promise.all(page.items.map((raw) => this.read(raw))), total: page.total };
    }
    const sizes = await Promise.all(drivers.map((key) => this.client.zCard(key)));
    const smallest = sizes.indexOf(Math.min(...sizes));
    const driver = drivers[smallest] as string;
    const size = sizes[smallest] as number;
    const others = filters.filter((key) => key !== driver);
    const total = others.length === 0 ? size : await this.client.zInterCard([driver, ...others]);
    if (!paging || total === 0) return { items: [], total };
    const ids =
      others.length === 0
        ? await this.client.zRange(driver, paging.offset, paging.offset + paging.limit - 1, {
            REV: paging.sort_order === "desc" ? true : undefined,
          })
        : await this.pageIds(driver, others, total, size, paging);
    return { items: await this.load(ids), total };
  }

  /**
   * Picks the cheapest way to one page of an intersection: walking the driver's order costs
   * about (offset+limit)/density steps per other index; a small intersection is cheaper to
   * compute whole (ZINTER); ZINTERSTORE is the fallback for large, sparse ones.
   */
  private async pageIds(driver: string, others: string[], total: number, size: number, paging: Paging) {
    const sets = { driver, others };
    const scanSteps = ((paging.offset + paging.limit) * size) / total;
    const small = total <= SMALL_INTERSECTION;
    if (scanSteps <= SCAN_BUDGET / 2 && (!small || scanSteps * others.length <= total * 4)) {
      const page = await scanPage(this.client, sets, paging, SCAN_BUDGET);
      if (page) return page;
    }
    if (small) return intersectPage(this.client, sets, paging);
    return storedIntersectPage(this.client, `${this.prefix}threads:scratch:${randomUUID()}`, sets, paging);
  }

  /**
   * Candidates read and checked one by one; values are read from checkpoints only for a
   * `values` filter on lists (messages), otherwise only for the page returned.
   */
  private async findByScan(filter: ThreadFilter, filters: string[], paging?: Paging): Promise<Page<Thread>> {
    let ids: string[];
    if (filter.ids) ids = [...new Set(filter.ids)];
    else if (filters.length > 1) ids = await this.client.zInter(filters as [string, ...string[]]);
    else ids = await this.client.zRange(filters[0] ?? this.keys.sort("created_at"), 0, -1);
    const valueKeys = Object.keys(filter.values ?? {});
    const candidate = async (raw: string) => {
      const record = JSON.parse(raw) as StoredThread;
      if (valueKeys.length === 0) return record;
      const values = filterableValues(record, valueKeys);
      return values === undefined ? this.read(raw) : { ...record, values };
    };
    const matching: { raw: string; record: ThreadFields }[] = [];
    for (let start = 0; start < ids.length; start += LOAD_CHUNK) {
      const raws = await this.records(ids.slice(start, start + LOAD_CHUNK));
      const records = await Promise.all(raws.map(candidate));
      for (const [i, record] of records.entries()) {
        if (matchesThread(record, filter)) matching.push({ raw: raws[i] as string, record });
      }
    }
    if (!paging) return { items: [], total: matching.length };
    const order = compareThreads(paging.sort_by, paging.sort_order);
    matching.sort((a, b) => order(a.record, b.record));
    const page = matching.slice(paging.offset, paging.offset + paging.limit);
    return { items: await Promise.all(page.map(({ raw }) => this.read(raw))), total: matching.length };
  }

  /** Stored records in the order of `ids`, skipping any deleted since the ids were read. */
  private async records(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const raws = await this.client.mGet(ids.map((id) => this.keys.record(id)));
    return raws.filter((raw): raw is string => raw !== null);
  }

  /** Threads in the order of `ids`, skipping any deleted since the ids were read. */
  private async load(ids: string[]): Promise<Thread[]> {
    return Promise.all((await this.records(ids)).map((raw) => this.read(raw)));
  }
}
