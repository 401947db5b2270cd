import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import { RESP_TYPES } from "redis";
import { leaseKeys } from "../runs/queue/redis-scripts.ts";
import { jsonContains } from "../storage/json-match.ts";
import { LruCache } from "../storage/lru-cache.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { CheckedList, StoredCheckpointRef, ThreadCheckpointer } from "../storage/types.ts";
import { type KnownVersion, KnownVersions } from "./deltas.ts";
import { rememberedTexts } from "./message-texts.ts";
import { checkpointMetadata, leaseOf, runIdOf, TaskWritesTracker } from "./metadata.ts";
import { asFullCopies, decodeBlobs, encodeBlob, orderedWrites, pairs, rememberStored } from "./redis-codec.ts";
import {
  blobField,
  CheckpointKeys,
  deleteThreadScript,
  loadTupleScript,
  namespaceOfScope,
  putCheckpointScript,
  putWritesScript,
  scopeOf,
  writeField,
} from "./redis-layout.ts";
import { writeFrame } from "./redis-pack.ts";
import { DELETED_COUNTER_SECONDS } from "./redis-plan.ts";
import { checkpointIds, LIST_PAGE, members, readWrites } from "./redis-reads.ts";
import { decodeRecord, packRecord, type RawRecord } from "./redis-record.ts";
import { type ColdLimits, ColdSegments, DEFAULT_COLD_LIMITS } from "./redis-segments.ts";
import { copyThread, deleteRun, pruneThread } from "./redis-threads.ts";
import { FastJsonPlusSerializer } from "./serde.ts";

const binaryClient = (client: RedisClient) => client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
type BinaryClient = ReturnType<typeof binaryClient>;

/** What `loadTupleScript` returns. */
type TupleReply = [Buffer, RawRecord, Buffer[], Buffer[][]];

/** Checkpoints whose channel versions `storedItemTexts` remembers: the latest of many threads. */
const RECENT_CHECKPOINTS = 1024;

const missingThreadId = (what: string) =>
  new Error(`Failed to ${what}: config.configurable.thread_id is required to know which thread to persist.`);

/**
 * LangGraph checkpointer on plain Redis 7. Channel values are stored once per (channel, version)
 * like the Postgres saver does, and a new version as a delta against the previous one this
 * process knows (`deltas.ts`), so a message added to a long conversation stores the message;
 * `put`, `putWrites` and `getTuple` are one script call each.
 */
export class RedisCheckpointer extends BaseCheckpointSaver implements ThreadCheckpointer {
  readonly keys: CheckpointKeys;
  readonly redis: BinaryClient;
  readonly #taskWrites = new TaskWritesTracker();
  readonly #known = new KnownVersions();
  /** The channel versions of the checkpoints this process put or read last, for `storedItemTexts`. */
  readonly #recentCheckpoints = new LruCache<ChannelVersions>(RECENT_CHECKPOINTS);
  /** Per root scope, the last checkpoint its running graph saved (`graphFinished`), until it is put. */
  readonly #lastCheckpoints = new LruCache<string>(RECENT_CHECKPOINTS);
  readonly cold: ColdSegments;

  /** The run queue's prefix: writes of a run are refused once its attempt lost the lease. */
  readonly #runsPrefix: string | undefined;

  constructor(
    client: RedisClient,
    options: { prefix: string; serde?: SerializerProtocol; runsPrefix?: string; cold?: ColdLimits },
  ) {
    super(options.serde ?? new FastJsonPlusSerializer());
    this.keys = new CheckpointKeys(options.prefix);
    this.#runsPrefix = options.runsPrefix;
    this.redis = binaryClient(client);
    this.cold = new ColdSegments(this, options.cold ?? DEFAULT_COLD_LIMITS);
  }

  /**
   * Versions get a random fraction (as the Python Postgres saver does with strings): a fork
   * from an older checkpoint re-uses integer versions that a later branch already stored with
   * other values, and per-version blobs must never be shared between such branches. Nine
   * random digits (one chance in 10⁹ that two branches pick the same) keep the versions short:
   * each is written in several places per checkpoint.
   */
  override getNextVersion(current: number | undefined): number {
    const base = current === undefined ? 0 : Math.floor(Number.parseFloat(String(current)));
    return Number(`${base + 1}.${Math.random().toFixed(9).slice(2)}`);
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) return undefined;
    const checkpointNs = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const checkpointId = (config.configurable?.checkpoint_id as string | undefined) ?? "";
    return this.loadTuple(threadId, checkpointNs, checkpointId);
  }

  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, filter } = options;
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;
    const threadId = config.configurable?.thread_id as string | undefined;
    const checkpointNs = config.configurable?.checkpoint_ns as string | undefined;
    const onlyId = config.configurable?.checkpoint_id as string | undefined;
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    const threads = threadId !== undefined ? [threadId] : await members(this.redis, this.keys.threads());
    for (const thread of threads) {
      const scopes =
        checkpointNs !== undefined
          ? [scopeOf(thread, checkpointNs)]
          : await members(this.redis, this.keys.scopesOf(thread));
      for (const scope of scopes) {
        const namespace = namespaceOfScope(scope);
        for await (const ids of checkpointIds(this, scope, beforeId, onlyId, filter ? LIST_PAGE : remaining)) {
          const tuples = await Promise.all(ids.map((id) => this.loadTuple(thread, namespace, id)));
          for (const tuple of tuples) {
            if (!tuple || (filter && !jsonContains(tuple.metadata, filter))) continue;
            yield tuple;
            remaining -= 1;
            if (remaining <= 0) return;
          }
        }
      }
    }
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw missingThreadId("put checkpoint");
    const checkpointNs = (config.configurable?.checkpoint_ns as string | undefined) ?? "";
    const parentId = config.configurable?.checkpoint_id as string | undefined;
    const scope = scopeOf(threadId, checkpointNs);
    const stored = checkpointMetadata(config, metadata, checkpoint, this.#taskWrites.put(config, checkpoint));
    const values = checkpoint.channel_values;
    // Read before any item is checked: only a graph that had finished by then counts.
    const put = { id: checkpoint.id, graphFinishedAt: this.#lastCheckpoints.get(scope) };
    const [record, blobs] = await Promise.all([
      packRecord(this.serde, threadId, checkpoint, stored, parentId),
      Promise.all(
        Object.keys(newVersions).map((channel) =>
          encodeBlob(this.serde, this.#known, scope, channel, newVersions[channel] as number | string, values, put),
        ),
      ),
    ]);
    const recordKey = this.keys.checkpoint(scope, checkpoint.id);
    const fence = this.#fence(config, threadId);
    const keys = [
      this.keys.blobs(scope),
      recordKey,
      this.keys.ids(scope),
      this.keys.scopesOf(threadId),
      this.keys.threads(),
      this.keys.changes(threadId),
    ];
    // A channel left empty is not stored: a version with no frame reads as no value, as "empty" does.
    const frames = blobs.filter((blob) => blob.type !== "empty");
    const run = () => {
      const args: (string | Buffer)[] = [...fence.args, scope, threadId, checkpoint.id, String(frames.length)];
      for (const { field, frame, base } of frames) args.push(field, frame, base?.field ?? "");
      args.push(record);
      return putCheckpointScript.run(this.redis, [...keys, ...fence.keys], args);
    };
    let result = await run();
    if (Array.isArray(result)) {
      // Deltas against versions removed since this process saw them: sent again as full copies.
      asFullCopies(blobs, new Set((result as Buffer[]).map(String)));
      result = await run();
    }
    rememberStored(this.#known, scope, blobs);
    if (put.graphFinishedAt === checkpoint.id) this.#lastCheckpoints.delete(scope);
    this.#recentCheckpoints.set(`${scope}\0${checkpoint.id}`, { ...checkpoint.channel_versions });
    if (typeof result === "number") this.cold.packSoon(threadId, scope, result);
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } };
  }

  graphFinished(threadId: string, checkpointId: string): void {
    this.#lastCheckpoints.set(scopeOf(threadId, ""), checkpointId);
  }

  graphReturned(threadId: string): void {
    this.#known.graphReturned(scopeOf(threadId, ""));
  }

  storedItemTexts(checkpoint: StoredCheckpointRef, channel: string): readonly Buffer[] | undefined {
    const scope = scopeOf(checkpoint.thread_id, checkpoint.checkpoint_ns);
    const version = this.#recentCheckpoints.get(`${scope}\0${checkpoint.checkpoint_id}`)?.[channel];
    if (version === undefined) return undefined;
    const known = this.#known.get(scope, channel);
    return known?.field === blobField(channel, version) ? known.itemTexts : undefined;
  }

  rememberedItemTexts(items: readonly unknown[], checked?: CheckedList): readonly Buffer[] | undefined {
    return rememberedTexts(items, checked);
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw missingThreadId("put writes");
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (checkpointId === undefined)
      throw new Error("Failed to put writes: config.configurable.checkpoint_id is required.");
    this.#taskWrites.record(config, taskId, taskPath, writes);
    const scope = scopeOf(threadId, (config.configurable?.checkpoint_ns as string | undefined) ?? "");
    // A task's code ran (and may have stopped at an interrupt or an error, with no put after it).
    this.#known.codeRan(scope);
    const runId = runIdOf(config);
    const encoded = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        const [type, bytes] = await this.serde.dumpsTyped(value);
        const index = WRITES_IDX_MAP[channel] ?? idx;
        return {
          index,
          field: writeField(taskId, index),
          frame: writeFrame({ channel, type, task_path: taskPath ?? "", ...(runId && { run_id: runId }) }, bytes),
        };
      }),
    );
    const fence = this.#fence(config, threadId);
    const args: (string | Buffer)[] = [...fence.args, checkpointId, scope, threadId];
    for (const { index, field, frame } of encoded) args.push(index < 0 ? "replace" : "keep", field, frame);
    await putWritesScript.run(
      this.redis,
      [
        ...[this.keys.packedWrites(scope), this.keys.scopesOf(threadId), this.keys.threads()],
        ...[this.keys.changes(threadId), ...fence.keys],
      ],
      args,
    );
  }

  /**
   * The lease fence of a run's write (issue #16): its record and thread lock, checked in the
   * write's script, so a worker whose run was taken over cannot write checkpoints meanwhile.
   */
  #fence(config: RunnableConfig, threadId: string): { keys: string[]; args: string[] } {
    const lease = leaseOf(config);
    if (!lease || this.#runsPrefix === undefined) return { keys: [], args: ["", ""] };
    return { keys: leaseKeys(this.#runsPrefix, lease.runId, threadId), args: [lease.runId, String(lease.attempt)] };
  }

  async deleteThread(threadId: string): Promise<void> {
    await deleteThreadScript.run(
      this.redis,
      [this.keys.scopesOf(threadId), this.keys.threads(), this.keys.changes(threadId)],
      [this.keys.base, threadId, String(DELETED_COUNTER_SECONDS)],
    );
  }

  /** Replaces the target thread with an independent copy of the source (every namespace, pending writes). */
  copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    return copyThread(this, sourceThreadId, targetThreadId);
  }

  /** Removes what one run stored on the thread: its checkpoints (every namespace) and its pending writes. */
  deleteRun(threadId: string, runId: string): Promise<void> {
    return deleteRun(this, threadId, runId);
  }

  /**
   * Keeps the latest root checkpoint with its pending writes and the channel versions it reads,
   * plus the latest checkpoint of subgraphs that root still has pending tasks for.
   */
  pruneThread(threadId: string): Promise<void> {
    return pruneThread(this, threadId);
  }

  /**
   * A checkpoint tuple; reading the latest one remembers its channel versions as bases for
   * deltas. Versions this process already has (it wrote or read them: a conversation's next run
   * starts from what its last one stored) are not fetched again: a stored version never changes,
   * and the script still reads which checkpoint is the latest and its record.
   */
  private async loadTuple(threadId: string, checkpointNs: string, checkpointId: string) {
    const scope = scopeOf(threadId, checkpointNs);
    const cached = this.#known.inScope(scope);
    const reply = (await loadTupleScript.run(
      this.redis,
      [this.keys.ids(scope), this.keys.blobs(scope), this.keys.packedWrites(scope)],
      [checkpointId, this.keys.checkpointPrefix(scope), this.keys.writesPrefix(scope), ...cached.keys()],
    )) as TupleReply | null;
    const at = { threadId, checkpointNs, scope, cached };
    if (reply) {
      const [idBytes, raw, writes, chains] = reply;
      return this.tupleOf(at, idBytes.toString(), { raw, writes: pairs(writes), chains }, checkpointId === "");
    }
    // Not in its keys: an older checkpoint, maybe in a cold segment (the latest never is).
    const cold = checkpointId === "" ? undefined : await this.cold.tuple(scope, checkpointId);
    return cold && this.tupleOf(at, checkpointId, cold, false);
  }

  /** The tuple from what a read fetched; `latest`: its versions become this process's delta bases. */
  private async tupleOf(
    at: { threadId: string; checkpointNs: string; scope: string; cached: Map<string, KnownVersion> },
    id: string,
    fetched: { raw: RawRecord; writes: (readonly [string, Buffer])[]; chains: Buffer[][] },
    latest: boolean,
  ): Promise<CheckpointTuple | undefined> {
    const { threadId, checkpointNs, scope, cached } = at;
    const record = await decodeRecord(this.serde, threadId, id, fetched.raw);
    if (!record) return undefined;
    const { checkpoint, parentId, blobList: blobs } = record;
    checkpoint.channel_values = await decodeBlobs(
      this.serde,
      this.#known,
      scope,
      blobs,
      fetched.chains,
      latest,
      cached,
    );
    this.#recentCheckpoints.set(`${scope}\0${id}`, { ...checkpoint.channel_versions });
    const writes = orderedWrites(fetched.writes);
    if (checkpoint.v < 4 && parentId !== undefined) await this.migratePendingSends(checkpoint, scope, parentId);
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: id } },
      checkpoint,
      metadata: record.metadata,
      pendingWrites: await Promise.all(
        writes.map(
          async ({ taskId, header, payload }): Promise<CheckpointPendingWrite> => [
            taskId,
            header.channel,
            await this.serde.loadsTyped(header.type, payload),
          ],
        ),
      ),
    };
    if (parentId !== undefined) {
      tuple.parentConfig = {
        configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: parentId },
      };
    }
    return tuple;
  }

  /** Checkpoints before format v4 kept sends as writes to TASKS on the parent (mirrors MemorySaver). */
  private async migratePendingSends(checkpoint: Checkpoint, scope: string, parentId: string): Promise<void> {
    const stored = new Map([
      ...(await this.cold.writes(scope, parentId)),
      ...(await readWrites(this, scope, parentId)),
    ]);
    const parentWrites = orderedWrites(stored);
    const sends = await Promise.all(
      parentWrites
        .filter(({ header }) => header.channel === TASKS)
        .map(({ header, payload }) => this.serde.loadsTyped(header.type, payload)),
    );
    checkpoint.channel_values ??= {};
    checkpoint.channel_values[TASKS] = sends;
    checkpoint.channel_versions ??= {};
    const versions = Object.values(checkpoint.channel_versions);
    checkpoint.channel_versions[TASKS] =
      versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
  }
}
