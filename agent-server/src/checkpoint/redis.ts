import type { RunnableConfig } from "@langchain/core/runnables";
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  maxChannelVersion,
  type PendingWrite,
  type SerializerProtocol,
  TASKS,
  WRITES_IDX_MAP,
  writesSortKey,
} from "@langchain/langgraph-checkpoint";
import { RESP_TYPES } from "redis";
import { jsonContains } from "../storage/json-match.ts";
import type { RedisClient } from "../storage/redis-client.ts";
import type { ThreadCheckpointer } from "../storage/types.ts";
import { applyChain, type DeltaHeader, deltaAgainst, type KnownVersion, KnownVersions } from "./deltas.ts";
import { checkpointMetadata, runIdOf, TaskWritesTracker } from "./metadata.ts";
import {
  blobField,
  CheckpointKeys,
  channelOfBlobField,
  decodeFrame,
  deleteThreadScript,
  encodeFrame,
  loadTupleScript,
  namespaceOfScope,
  parseWriteField,
  putCheckpointScript,
  putWritesScript,
  scopeOf,
  writeField,
} from "./redis-layout.ts";
import { copyThread, deleteRun, members, pruneThread } from "./redis-threads.ts";
import { FastJsonPlusSerializer } from "./serde.ts";

const binaryClient = (client: RedisClient) => client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
type BinaryClient = ReturnType<typeof binaryClient>;

type Maybe<T> = T | null;
/** What `loadTupleScript` returns. */
type TupleReply = [Buffer, Maybe<Buffer>[], Buffer[], Buffer[][]];

/** One channel version to store: its blob field, full bytes and the frame written for it. */
interface BlobWrite {
  channel: string;
  field: string;
  type: string;
  bytes: Buffer;
  frame: Buffer;
  /** The known version the frame is a delta against, and the delta's payload bytes. */
  base?: KnownVersion;
  deltaBytes?: number;
}

export interface WriteHeader {
  channel: string;
  type: string;
  task_path: string;
  /** The run that stored the write, so rolling the run back removes it. */
  run_id?: string;
}

interface StoredWrite {
  taskId: string;
  idx: number;
  header: WriteHeader;
  payload: Buffer;
}

const LIST_PAGE = 64;

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

  constructor(client: RedisClient, options: { prefix: string; serde?: SerializerProtocol }) {
    super(options.serde ?? new FastJsonPlusSerializer());
    this.keys = new CheckpointKeys(options.prefix);
    this.redis = binaryClient(client);
  }

  /**
   * Versions get a random fraction (as the Python Postgres saver does with strings): a fork
   * from an older checkpoint re-uses integer versions that a later branch already stored with
   * other values, and per-version blobs must never be shared between such branches.
   */
  override getNextVersion(current: number | undefined): number {
    const base = current === undefined ? 0 : Math.floor(Number.parseFloat(String(current)));
    return base + 1 + Math.random();
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
        for await (const ids of this.idPages(scope, beforeId, onlyId, filter ? LIST_PAGE : remaining)) {
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
    const { channel_values: values, ...withoutValues } = checkpoint;
    const [[type, serialized], [metadataType, serializedMetadata], blobs] = await Promise.all([
      this.serde.dumpsTyped(withoutValues),
      this.serde.dumpsTyped(stored),
      Promise.all(
        Object.entries(newVersions).map(async ([channel, version]): Promise<BlobWrite> => {
          const field = blobField(channel, version);
          if (!(channel in values)) {
            return {
              channel,
              field,
              type: "empty",
              bytes: Buffer.alloc(0),
              frame: encodeFrame({ type: "empty" }, Buffer.alloc(0)),
            };
          }
          const [blobType, serializedValue] = await this.serde.dumpsTyped(values[channel]);
          const bytes = Buffer.from(serializedValue.buffer, serializedValue.byteOffset, serializedValue.byteLength);
          const base = this.#known.get(scope, channel);
          const delta = base && base.field !== field ? deltaAgainst(base, blobType, bytes) : undefined;
          return delta
            ? {
                ...{ channel, field, type: blobType, bytes, base, deltaBytes: delta.payload.length },
                frame: encodeFrame(delta.header, delta.payload),
              }
            : { channel, field, type: blobType, bytes, frame: encodeFrame({ type: blobType }, bytes) };
        }),
      ),
    ]);
    const recordKey = this.keys.checkpoint(scope, checkpoint.id);
    const record: Record<string, string | Buffer> = {
      checkpoint: Buffer.from(serialized),
      type,
      metadata: Buffer.from(serializedMetadata),
      metadata_type: metadataType,
      blobs: Object.entries(checkpoint.channel_versions)
        .map(([channel, version]) => blobField(channel, version))
        .join("\0"),
    };
    if (parentId !== undefined) record.parent = parentId;
    const keys = [
      this.keys.blobs(scope),
      recordKey,
      this.keys.ids(scope),
      this.keys.scopesOf(threadId),
      this.keys.threads(),
    ];
    const run = () => {
      const args: (string | Buffer)[] = [scope, threadId, checkpoint.id, String(blobs.length)];
      for (const { field, frame, base } of blobs) args.push(field, frame, base?.field ?? "");
      for (const [field, value] of Object.entries(record)) args.push(field, value);
      return putCheckpointScript.run(this.redis, keys, args);
    };
    const missing = await run();
    if (Array.isArray(missing)) {
      // Deltas against versions removed since this process saw them: sent again as full copies.
      const gone = new Set((missing as Buffer[]).map(String));
      for (const blob of blobs) {
        if (!gone.has(blob.field)) continue;
        blob.frame = encodeFrame({ type: blob.type }, blob.bytes);
        delete blob.base;
        delete blob.deltaBytes;
      }
      await run();
    }
    for (const { channel, field, type: blobType, bytes, base, deltaBytes = 0 } of blobs) {
      if (blobType === "empty") this.#known.delete(scope, channel);
      else if (!base) this.#known.set(scope, channel, { field, type: blobType, bytes, depth: 0, chainBytes: 0 });
      else {
        const chainBytes = base.chainBytes + deltaBytes;
        this.#known.set(scope, channel, { field, type: blobType, bytes, depth: base.depth + 1, chainBytes });
      }
    }
    return { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: checkpoint.id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined) throw missingThreadId("put writes");
    const checkpointId = config.configurable?.checkpoint_id as string | undefined;
    if (checkpointId === undefined)
      throw new Error("Failed to put writes: config.configurable.checkpoint_id is required.");
    this.#taskWrites.record(config, taskId, taskPath, writes);
    const scope = scopeOf(threadId, (config.configurable?.checkpoint_ns as string | undefined) ?? "");
    const key = this.keys.writes(scope, checkpointId);
    const runId = runIdOf(config);
    const encoded = await Promise.all(
      writes.map(async ([channel, value], idx) => {
        const [type, bytes] = await this.serde.dumpsTyped(value);
        const index = WRITES_IDX_MAP[channel] ?? idx;
        return {
          index,
          field: writeField(taskId, index),
          frame: encodeFrame({ channel, type, task_path: taskPath ?? "", ...(runId && { run_id: runId }) }, bytes),
        };
      }),
    );
    const args: (string | Buffer)[] = [checkpointId, scope, threadId];
    for (const { index, field, frame } of encoded) args.push(index < 0 ? "replace" : "keep", field, frame);
    await putWritesScript.run(
      this.redis,
      [key, this.keys.writeIds(scope), this.keys.scopesOf(threadId), this.keys.threads()],
      args,
    );
  }

  async deleteThread(threadId: string): Promise<void> {
    await deleteThreadScript.run(
      this.redis,
      [this.keys.scopesOf(threadId), this.keys.threads()],
      [this.keys.base, threadId],
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

  /** Checkpoint ids of a scope, newest first, below `beforeId`, in pages of `pageSize`. */
  private async *idPages(scope: string, beforeId?: string, onlyId?: string, pageSize = LIST_PAGE) {
    if (onlyId) {
      if (beforeId === undefined || onlyId < beforeId) yield [onlyId];
      return;
    }
    let upper = beforeId ? `(${beforeId}` : "+";
    const count = Math.min(pageSize, LIST_PAGE);
    for (;;) {
      const page = (await this.redis.sendCommand([
        "ZRANGE",
        this.keys.ids(scope),
        upper,
        "-",
        "BYLEX",
        "REV",
        "LIMIT",
        "0",
        String(count),
      ])) as Buffer[];
      const ids = page.map((id) => id.toString());
      if (ids.length > 0) yield ids;
      if (ids.length < count) return;
      upper = `(${ids[ids.length - 1]}`;
    }
  }

  /** A checkpoint tuple; reading the latest one remembers its channel versions as bases for deltas. */
  private async loadTuple(threadId: string, checkpointNs: string, checkpointId: string) {
    const scope = scopeOf(threadId, checkpointNs);
    const reply = (await loadTupleScript.run(
      this.redis,
      [this.keys.ids(scope), this.keys.blobs(scope)],
      [checkpointId, this.keys.checkpointPrefix(scope), this.keys.writesPrefix(scope)],
    )) as TupleReply | null;
    if (!reply) return undefined;
    const [idBytes, [serialized, type, metadataBytes, metadataType, parentBytes, blobList], writesFlat, chains] = reply;
    if (!serialized || !type || !metadataBytes || !metadataType) return undefined;
    const id = idBytes.toString();
    const parentId = parentBytes?.toString();
    const checkpoint = (await this.serde.loadsTyped(type.toString(), serialized)) as Checkpoint;
    checkpoint.channel_values = await this.loadBlobs(scope, blobList?.toString() ?? "", chains, checkpointId === "");
    const writes = orderedWrites(pairs(writesFlat));
    if (checkpoint.v < 4 && parentId !== undefined) await this.migratePendingSends(checkpoint, scope, parentId);
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: threadId, checkpoint_ns: checkpointNs, checkpoint_id: id } },
      checkpoint,
      metadata: (await this.serde.loadsTyped(metadataType.toString(), metadataBytes)) as CheckpointMetadata,
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

  /** Channel values from each blob's chain of frames (newest first); `remember`: as bases for deltas. */
  private async loadBlobs(
    scope: string,
    blobList: string,
    chains: Buffer[][],
    remember: boolean,
  ): Promise<Record<string, unknown>> {
    const fields = blobList === "" ? [] : blobList.split("\0");
    const values: Record<string, unknown> = {};
    await Promise.all(
      fields.map(async (field, index) => {
        const frames = (chains[index] ?? []).map((frame) => decodeFrame<DeltaHeader>(frame)).reverse();
        const [full, ...deltas] = frames;
        if (!full) return;
        const { type } = frames[frames.length - 1]?.header ?? full.header;
        if (type === "empty") return;
        const bytes = applyChain(full.payload, deltas);
        const channel = channelOfBlobField(field);
        if (remember) {
          const chainBytes = deltas.reduce((sum, delta) => sum + delta.payload.length, 0);
          this.#known.set(scope, channel, { field, type, bytes, depth: deltas.length, chainBytes });
        }
        values[channel] = await this.serde.loadsTyped(type, bytes);
      }),
    );
    return values;
  }

  /** Checkpoints before format v4 kept sends as writes to TASKS on the parent (mirrors MemorySaver). */
  private async migratePendingSends(checkpoint: Checkpoint, scope: string, parentId: string): Promise<void> {
    const stored = await this.redis.hGetAll(this.keys.writes(scope, parentId));
    const parentWrites = orderedWrites(
      Object.entries(stored).map(([field, frame]) => [field, frame as Buffer] as const),
    );
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

/** A flat HGETALL reply (as Lua returns it) as field/value pairs. */
function pairs(flat: Buffer[]): (readonly [string, Buffer])[] {
  const result: (readonly [string, Buffer])[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) result.push([(flat[i] as Buffer).toString(), flat[i + 1] as Buffer]);
  return result;
}

/** Decodes stored writes, in the order live execution applies them. */
function orderedWrites(entries: Iterable<readonly [string, Buffer]>): StoredWrite[] {
  const writes: StoredWrite[] = [];
  for (const [field, frame] of entries) {
    const { taskId, idx } = parseWriteField(field);
    const { header, payload } = decodeFrame<WriteHeader>(frame);
    writes.push({ taskId, idx, header, payload });
  }
  const sortKey = (write: StoredWrite) => writesSortKey(write.header.task_path, write.taskId, write.idx);
  return writes.sort((a, b) => compareWritesSortKeys(sortKey(a), sortKey(b)));
}
