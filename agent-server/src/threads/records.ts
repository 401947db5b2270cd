import { v7 as uuidv7 } from "uuid";
import { matchesAuthFilter } from "../custom-auth/authorize.ts";
import { MINUTE_MS, mergeMetadata } from "../schemas/common.ts";
import { jsonContains } from "../storage/json-match.ts";
import type {
  JsonObject,
  Thread,
  ThreadCreate,
  ThreadFilter,
  ThreadSearch,
  ThreadStatus,
  ThreadTtl,
  ThreadTtlPolicy,
  ThreadUpdate,
} from "../storage/types.ts";
import { jsonText } from "../stream/references.ts";

/** Pure rules shared by every ThreadStore backend, so memory and Redis answer alike. */

/** A thread without its values (which a Redis record may keep in a checkpoint). */
export type ThreadFields = Omit<Thread, "values">;

/** A TTL counted from `now`, the thread's latest activity. */
function ttlFrom(policy: Pick<ThreadTtl, "strategy" | "ttl_minutes">, now: string): ThreadTtl {
  const expiresAt = new Date(Date.parse(now) + policy.ttl_minutes * MINUTE_MS).toISOString();
  return { strategy: policy.strategy, ttl_minutes: policy.ttl_minutes, expires_at: expiresAt };
}

const ttlOf = (policy: ThreadTtlPolicy, now: string) =>
  ttlFrom({ strategy: policy.strategy, ttl_minutes: policy.ttl }, now);

export function newThread(input: ThreadCreate, now: string): Thread {
  return {
    thread_id: input.thread_id ?? uuidv7(),
    created_at: now,
    updated_at: now,
    state_updated_at: now,
    metadata: input.metadata ?? {},
    status: "idle",
    config: {},
    values: null,
    interrupts: {},
    ...(input.ttl && { ttl: ttlOf(input.ttl, now) }),
  };
}

/** The one rule for a thread's status: `busy` while a run is in flight, else what the writer says (or as it was). */
export const deriveStatus = (thread: Thread, update: ThreadUpdate, runsInFlight: boolean): ThreadStatus =>
  runsInFlight ? "busy" : (update.status ?? thread.status);

/** `runsInFlight`: the thread has a run pending or running, as the store saw in the step that writes. */
export function applyThreadUpdate(thread: Thread, update: ThreadUpdate, now: string, runsInFlight: boolean): Thread {
  const status = deriveStatus(thread, update, runsInFlight);
  if (update.ttl_applied) {
    return { ...thread, status, ...(thread.ttl && { ttl: { ...thread.ttl, expires_at: null } }) };
  }
  const next: Thread = { ...thread, updated_at: now, status };
  // Every write is activity: the TTL counts again from now.
  if (update.ttl === null) delete next.ttl;
  else if (update.ttl) next.ttl = ttlOf(update.ttl, now);
  else if (thread.ttl) next.ttl = ttlFrom(thread.ttl, now);
  if (update.metadata) {
    // Checked on the record being replaced, inside the store's compare-and-set: nothing is written when refused.
    next.metadata = update.metadata_bounded
      ? mergeMetadata(thread.metadata, update.metadata)
      : { ...thread.metadata, ...update.metadata };
  }
  if (update.values !== undefined) next.values = update.values;
  else if (update.values_json !== undefined) next.values = JSON.parse(jsonText(update.values_json)) as JsonObject;
  if (update.interrupts) next.interrupts = update.interrupts;
  if (update.config) next.config = update.config;
  if (update.state_updated) next.state_updated_at = now;
  return next;
}

/** `values` are read only for a `values` filter. */
export function matchesThread(thread: ThreadFields & { values?: unknown }, filter: ThreadFilter): boolean {
  if (filter.ids && !filter.ids.includes(thread.thread_id)) return false;
  if (filter.status && thread.status !== filter.status) return false;
  if (filter.metadata && !jsonContains(thread.metadata, filter.metadata)) return false;
  if (filter.auth && !matchesAuthFilter(thread.metadata, filter.auth)) return false;
  if (filter.values && Object.keys(filter.values).length > 0 && !jsonContains(thread.values, filter.values)) {
    return false;
  }
  return true;
}

/** Alphabetical, so `sort_by: status` orders the same in every backend. */
export const STATUS_ORDER: readonly ThreadStatus[] = ["busy", "error", "idle", "interrupted"];

export type ThreadSortField = ThreadSearch["sort_by"];

/** The numeric part of the sort key; ties (and `thread_id` sorting) fall back to the id. */
export function threadSortScore(thread: ThreadFields, sortBy: ThreadSortField): number {
  switch (sortBy) {
    case "thread_id":
      return 0;
    case "status":
      return STATUS_ORDER.indexOf(thread.status);
    default:
      return Date.parse(thread[sortBy]);
  }
}

export function compareThreads(sortBy: ThreadSortField, order: ThreadSearch["sort_order"]) {
  const direction = order === "asc" ? 1 : -1;
  return (a: ThreadFields, b: ThreadFields): number => {
    const byScore = threadSortScore(a, sortBy) - threadSortScore(b, sortBy);
    if (byScore !== 0) return byScore * direction;
    return (a.thread_id < b.thread_id ? -1 : a.thread_id > b.thread_id ? 1 : 0) * direction;
  };
}
