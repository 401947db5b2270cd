import type { RunnableConfig } from "@langchain/core/runnables";
import {
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  MemorySaver,
  type PendingWrite,
  WRITES_IDX_MAP,
} from "@langchain/langgraph-checkpoint";
import { jsonContains } from "../storage/json-match.ts";
import type { ThreadCheckpointer } from "../storage/types.ts";
import { checkpointMetadata, runIdOf, TaskWritesTracker } from "./metadata.ts";
import { latestId, namespacesToKeep } from "./prune.ts";

/** MemorySaver keys its pending writes by this JSON triple. */
const writesKey = (threadId: string, checkpointNs: string, checkpointId: string) =>
  JSON.stringify([threadId, checkpointNs, checkpointId]);

const parseWritesKey = (key: string) => JSON.parse(key) as [string, string, string];

/** The embedded checkpointer: LangGraph's MemorySaver plus whole-thread copy and prune. */
export class MemoryCheckpointer extends MemorySaver implements ThreadCheckpointer {
  readonly #taskWrites = new TaskWritesTracker();
  /** Per thread and run, the writes keys (`writes` entry, task key) the run stored, so a rollback removes them too. */
  readonly #runWrites = new Map<string, Map<string, [string, string][]>>();

  override put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata): Promise<RunnableConfig> {
    const producedBy = this.#taskWrites.put(config, checkpoint);
    return super.put(config, checkpoint, checkpointMetadata(config, metadata, checkpoint, producedBy));
  }

  override async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string) {
    this.#taskWrites.record(config, taskId, taskPath, writes);
    const runId = runIdOf(config);
    const { thread_id, checkpoint_ns, checkpoint_id } = config.configurable ?? {};
    const outerKey = writesKey(thread_id, checkpoint_ns ?? "", checkpoint_id);
    // Mirrors MemorySaver: special writes (negative index) replace, regular ones are written once.
    const stored = writes
      .map(([channel], idx) => WRITES_IDX_MAP[channel] || idx)
      .filter((index) => index < 0 || !(`${taskId},${index}` in (this.writes[outerKey] ?? {})))
      .map((index): [string, string] => [outerKey, `${taskId},${index}`]);
    await super.putWrites(config, writes, taskId, taskPath);
    if (runId === undefined) return;
    const runs = this.#runWrites.get(thread_id) ?? new Map<string, [string, string][]>();
    runs.set(runId, [...(runs.get(runId) ?? []), ...stored]);
    this.#runWrites.set(thread_id, runs);
  }

  override async deleteThread(threadId: string): Promise<void> {
    this.#runWrites.delete(threadId);
    await super.deleteThread(threadId);
  }

  async deleteRun(threadId: string, runId: string): Promise<void> {
    for (const [outerKey, innerKey] of this.#runWrites.get(threadId)?.get(runId) ?? []) {
      delete this.writes[outerKey]?.[innerKey];
    }
    this.#runWrites.get(threadId)?.delete(runId);
    const namespaces = this.storage[threadId];
    if (!namespaces) return;
    for (const [namespace, checkpoints] of Object.entries(namespaces)) {
      for (const [id, [, metadata]] of Object.entries(checkpoints)) {
        const decoded = (await this.serde.loadsTyped("json", metadata)) as CheckpointMetadata & { run_id?: unknown };
        if (decoded.run_id !== runId) continue;
        delete checkpoints[id];
        delete this.writes[writesKey(threadId, namespace, id)];
      }
      if (Object.keys(checkpoints).length === 0) delete namespaces[namespace];
    }
    if (Object.keys(namespaces).length === 0) delete this.storage[threadId];
  }

  /** Metadata filters use containment (nested objects match by subset), as the Redis checkpointer does. */
  override async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { filter, limit, ...rest } = options;
    if (!filter) {
      yield* super.list(config, options);
      return;
    }
    let remaining = limit ?? Number.POSITIVE_INFINITY;
    if (remaining <= 0) return;
    for await (const tuple of super.list(config, rest)) {
      if (!jsonContains(tuple.metadata, filter)) continue;
      yield tuple;
      remaining -= 1;
      if (remaining <= 0) return;
    }
  }

  async copyThread(sourceThreadId: string, targetThreadId: string): Promise<void> {
    if (sourceThreadId === targetThreadId) return;
    await this.deleteThread(targetThreadId);
    const source = this.storage[sourceThreadId];
    if (!source) return;
    const target: (typeof this.storage)[string] = Object.create(null);
    for (const [namespace, checkpoints] of Object.entries(source)) {
      target[namespace] = Object.create(null);
      for (const [id, [checkpoint, metadata, parentId]] of Object.entries(checkpoints)) {
        (target[namespace] as (typeof target)[string])[id] = [
          structuredClone(checkpoint),
          await this.rewriteThreadId(metadata, targetThreadId),
          parentId,
        ];
      }
    }
    this.storage[targetThreadId] = target;
    for (const [key, writes] of Object.entries(this.writes)) {
      const [threadId, namespace, checkpointId] = parseWritesKey(key);
      if (threadId === sourceThreadId) {
        this.writes[writesKey(targetThreadId, namespace, checkpointId)] = structuredClone(writes);
      }
    }
  }

  async pruneThread(threadId: string): Promise<void> {
    const namespaces = this.storage[threadId];
    if (!namespaces) return;
    const rootLatest = latestId(Object.keys(namespaces[""] ?? {}));
    const rootWrites = rootLatest ? Object.values(this.writes[writesKey(threadId, "", rootLatest)] ?? {}) : [];
    const keep = namespacesToKeep(Object.keys(namespaces), new Set(rootWrites.map(([taskId]) => taskId)));
    const keptIds = new Map<string, string>();
    for (const [namespace, checkpoints] of Object.entries(namespaces)) {
      const kept = keep.has(namespace) ? latestId(Object.keys(checkpoints)) : undefined;
      if (kept === undefined) {
        delete namespaces[namespace];
        continue;
      }
      keptIds.set(namespace, kept);
      for (const id of Object.keys(checkpoints)) if (id !== kept) delete checkpoints[id];
    }
    for (const key of Object.keys(this.writes)) {
      const [writeThreadId, namespace, checkpointId] = parseWritesKey(key);
      if (writeThreadId === threadId && keptIds.get(namespace) !== checkpointId) delete this.writes[key];
    }
  }

  private async rewriteThreadId(metadata: Uint8Array, targetThreadId: string): Promise<Uint8Array> {
    const decoded = (await this.serde.loadsTyped("json", metadata)) as CheckpointMetadata;
    if (!("thread_id" in decoded)) return structuredClone(metadata);
    const [, rewritten] = await this.serde.dumpsTyped({ ...decoded, thread_id: targetThreadId });
    return rewritten;
  }
}
