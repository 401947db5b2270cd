import type { BaseCheckpointSaver } from "@langchain/langgraph-checkpoint";
import type { LongTermStore } from "../long-term-store/store.ts";
import type { CheckpointValues, CheckpointValuesRef, JsonParts } from "../stream/references.ts";
import type { RedisClient } from "./redis-client.ts";

/**
 * Records as they are stored and returned by the API. Timestamps are ISO-8601 strings;
 * ids are uuids. Field names follow the LangGraph Agent Server API (snake_case).
 */
export type JsonObject = Record<string, unknown>;

export type SortOrder = "asc" | "desc";

export interface Page<T> {
  items: T[];
  /** Number of records matching the filter, ignoring limit/offset. */
  total: number;
}

// ---------------------------------------------------------------- assistants

export interface Assistant {
  assistant_id: string;
  graph_id: string;
  config: JsonObject;
  context: JsonObject;
  metadata: JsonObject;
  version: number;
  name: string;
  description: string | null;
  created_at: string;
  updated_at: string;
}

export type AssistantVersion = Omit<Assistant, "updated_at" | "version"> & { version: number };

export interface AssistantCreate {
  assistant_id?: string;
  graph_id: string;
  config?: JsonObject;
  context?: JsonObject;
  metadata?: JsonObject;
  name?: string;
  description?: string | null;
  /** `raise` (default): 409 when the id exists; `do_nothing`: return the existing one. */
  if_exists?: "raise" | "do_nothing";
}

export interface AssistantPatch {
  graph_id?: string;
  /** Replaces the config. */
  config?: JsonObject;
  /** Replaces the context. */
  context?: JsonObject;
  /** Merged (shallow) into the metadata. */
  metadata?: JsonObject;
  name?: string;
  description?: string | null;
}

export interface AssistantFilter {
  metadata?: JsonObject;
  graph_id?: string;
  /** Case-insensitive substring of the name. */
  name?: string;
  /** Custom auth's filter on the metadata: see `matchesAuthFilter`. */
  auth?: JsonObject;
}

export interface AssistantVersionQuery {
  /** Contained in the version's metadata. */
  metadata?: JsonObject;
  /** Custom auth's filter on the version's metadata: see `matchesAuthFilter`. */
  auth?: JsonObject;
  limit: number;
  offset: number;
}

export interface AssistantSearch extends AssistantFilter {
  limit: number;
  offset: number;
  sort_by: "assistant_id" | "graph_id" | "name" | "created_at" | "updated_at";
  sort_order: SortOrder;
}

export interface AssistantStore {
  create(input: AssistantCreate): Promise<Assistant>;
  get(assistantId: string): Promise<Assistant | undefined>;
  /** Writes version max+1 and makes it current; undefined when the assistant does not exist. */
  patch(assistantId: string, patch: AssistantPatch): Promise<Assistant | undefined>;
  delete(assistantId: string): Promise<boolean>;
  search(query: AssistantSearch): Promise<Page<Assistant>>;
  count(filter: AssistantFilter): Promise<number>;
  /** Newest first. */
  versions(assistantId: string, query: AssistantVersionQuery): Promise<AssistantVersion[]>;
  /** Makes an existing version current; undefined when the assistant or the version is unknown. */
  setLatest(assistantId: string, version: number): Promise<Assistant | undefined>;
}

// ---------------------------------------------------------------- threads

export type ThreadStatus = "idle" | "busy" | "interrupted" | "error";

export interface Interrupt {
  id?: string;
  value: unknown;
}

/** What happens to a thread its TTL ran out on: deleted whole, or only its older checkpoints. */
export type ThreadTtlStrategy = "delete" | "keep_latest";

export interface ThreadTtlPolicy {
  strategy: ThreadTtlStrategy;
  /** Minutes of inactivity (no write to the thread: runs, state updates, patches) before it expires. */
  ttl: number;
}

/** A thread's TTL as stored with it; `expires_at` is null once the sweeper has applied it. */
export interface ThreadTtl {
  strategy: ThreadTtlStrategy;
  ttl_minutes: number;
  expires_at: string | null;
}

export interface Thread {
  thread_id: string;
  created_at: string;
  updated_at: string;
  state_updated_at: string;
  metadata: JsonObject;
  status: ThreadStatus;
  config: JsonObject;
  values: JsonObject | null;
  interrupts: Record<string, Interrupt[]>;
  /** Only on threads with a TTL; API responses show it on request (`?include=ttl`). */
  ttl?: ThreadTtl;
}

export interface ThreadCreate {
  thread_id?: string;
  metadata?: JsonObject;
  if_exists?: "raise" | "do_nothing";
  ttl?: ThreadTtlPolicy;
}

export interface ThreadFilter {
  ids?: string[];
  /** Containment: every key must be present with an equal value (objects recursively). */
  metadata?: JsonObject;
  values?: JsonObject;
  status?: ThreadStatus;
  /**
   * What custom auth's filter leaves to check record by record (`$contains`; its equalities go
   * into `metadata`, where indexes answer them): see `matchesAuthFilter`.
   */
  auth?: JsonObject;
}

export interface ThreadSearch extends ThreadFilter {
  limit: number;
  offset: number;
  sort_by: "thread_id" | "status" | "created_at" | "updated_at" | "state_updated_at";
  sort_order: SortOrder;
}

/** Fields the server itself maintains as runs progress (status, values, …). */
export interface ThreadUpdate {
  metadata?: JsonObject;
  /** `metadata` is a client's PATCH: the merge is refused (422) past the key limit (`mergeMetadata`). */
  metadata_bounded?: boolean;
  /**
   * The status once no run of the thread is pending or running (a run's outcome); while one is,
   * the store writes `busy` whatever this says, checked in the same atomic step as the write.
   * Absent: the status stays as it is (or becomes `busy`).
   */
  status?: ThreadStatus;
  values?: JsonObject | null;
  /**
   * The checkpoint whose state `values` are (a run's final values, streamed as that reference):
   * a store may keep the reference instead of a copy of the state.
   */
  values_at?: CheckpointValuesRef;
  /**
   * With `values_at`, instead of `values`: their JSON (UTF-8), as read from the checkpoint; a
   * store that keeps a copy of the values parses it.
   */
  values_json?: JsonParts;
  interrupts?: Record<string, Interrupt[]>;
  config?: JsonObject;
  /** Set when values/interrupts change. */
  state_updated?: boolean;
  /** A new TTL policy; null removes the thread's TTL. */
  ttl?: ThreadTtlPolicy | null;
  /**
   * The TTL sweeper pruned the thread (`keep_latest`): it stays, without an expiry until its next
   * write, and this update does not count as activity.
   */
  ttl_applied?: boolean;
}

/** A run's worker as it writes: its lease is the run's attempt while the run holds its thread's lock. */
export interface RunFence {
  runId: string;
  attempt: number;
}

/**
 * Every thread write derives `status` from the thread's runs in the same atomic step (`busy`
 * exactly while one is pending or running), so no writer can put `idle` over a run that just
 * started: see docs/design/thread-lifecycle.md.
 */
export interface ThreadStore {
  create(input: ThreadCreate): Promise<Thread>;
  get(threadId: string): Promise<Thread | undefined>;
  /**
   * Merges metadata (shallow) and applies server-maintained fields; undefined when unknown.
   * `current`, the record as the caller last read it, saves reading it again; if it is stale the
   * update reads the stored record and applies to that.
   */
  update(threadId: string, update: ThreadUpdate, current?: Thread): Promise<Thread | undefined>;
  /**
   * `update` by the worker of `fence.runId`: written only while that attempt still holds the
   * thread's lock (`lease-lost` otherwise), and that run no longer counts as in flight (it is ending).
   */
  updateByRun(
    threadId: string,
    update: ThreadUpdate,
    fence: RunFence,
    current?: Thread,
  ): Promise<Thread | "missing" | "lease-lost">;
  delete(threadId: string): Promise<boolean>;
  /**
   * `update` and `delete` that act only while the stored record is still `expected` (as read),
   * for work that must not touch a thread written meanwhile (TTL sweeps); undefined / false when
   * it changed or is gone; a run started or ended since counts as a change, and
   * `deleteIfUnchanged` leaves a thread with a run in flight alone.
   */
  updateIfUnchanged(expected: Thread, update: ThreadUpdate): Promise<Thread | undefined>;
  deleteIfUnchanged(expected: Thread): Promise<boolean>;
  search(query: ThreadSearch): Promise<Page<Thread>>;
  count(filter: ThreadFilter): Promise<number>;
  /** Up to `limit` ids of threads whose TTL expired at or before `now`, soonest expired first. */
  expired(now: Date, limit: number): Promise<string[]>;
}

// ---------------------------------------------------------------- bundle

/** A checkpointer that can also copy and prune whole threads (all namespaces). */
export interface ThreadCheckpointer extends BaseCheckpointSaver {
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void>;
  /** Removes every checkpoint of the thread except the latest of the root namespace. */
  pruneThread(threadId: string): Promise<void>;
  /**
   * Removes what one run stored on the thread (checkpoints whose metadata has its `run_id`, in
   * every namespace, and the pending writes it left), so the thread is as before the run.
   */
  deleteRun(threadId: string, runId: string): Promise<void>;
  /**
   * The stored text of each item of a list channel at a checkpoint this process has just put or
   * read, while it still holds that version; undefined otherwise (then the checkpoint is read).
   */
  storedItemTexts?(checkpoint: StoredCheckpointRef, channel: string): readonly Buffer[] | undefined;
  /**
   * The stored text of each item of a list this process put or handed out, when every item is
   * unchanged since (checked); undefined otherwise (then the list is converted as it is).
   * `checked`: a list of the same answer just found unchanged (`rememberedTexts`).
   */
  rememberedItemTexts?(items: readonly unknown[], checked?: CheckedList): readonly Buffer[] | undefined;
  /**
   * A run's graph saved its last checkpoint on the thread (the one `checkpointId` names: no task
   * follows it), though its puts may still be pending: none of its code runs any more, so a
   * put that checks the conversation after this needs no second check by the put of that one.
   */
  graphFinished?(threadId: string, checkpointId: string): void;
  /**
   * A run's graph returned on the thread (nothing pending): none of its code runs after its
   * last checkpoint, so what that put checked needs no check when the next run reads it.
   */
  graphReturned?(threadId: string): void;
}

/** A list whose items were all just found unchanged (`rememberedItemTexts`), with their texts. */
export interface CheckedList {
  readonly items: readonly unknown[];
  readonly texts: readonly Buffer[];
}

/** Where a checkpoint is: its thread, namespace and id. */
export interface StoredCheckpointRef {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
}

export interface Storage {
  kind: "memory" | "redis";
  assistants: AssistantStore;
  threads: ThreadStore;
  checkpointer: ThreadCheckpointer;
  /** States at checkpoints as API JSON, from what this process holds where it can (runs' answers, thread and state reads). */
  checkpointValues: CheckpointValues;
  /** Long-term memory with per-item TTLs (what graphs get as `config.store`). */
  store: LongTermStore;
  /** The connection the Redis stores share (Redis storage only), for other light Redis users (crons). */
  redis?: RedisClient;
  /** Checks the backing store answers (for `/ok?check_db=1`). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
