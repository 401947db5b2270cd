import type { CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import { latestId, namespacesToKeep } from "./prune.ts";
import type { RedisCheckpointer } from "./redis.ts";
import { copySnapshotScript, namespaceOfScope, parseWriteField, scopeOf } from "./redis-layout.ts";
import { decodeWriteFrame, packEntries, unpackEntries } from "./redis-pack.ts";
import { changeAtomically, Plan } from "./redis-plan.ts";
import { members, readRecords, readWrites, withDeltaBases } from "./redis-reads.ts";
import { blobListOf, runIdOfRecord } from "./redis-record.ts";
import { involvedInDelete, planThaw } from "./redis-segment-pack.ts";

/**
 * Replaces the target thread with an independent copy of the source (every namespace, pending
 * writes), as the source was at one moment: a checkpoint written meanwhile makes it plan again.
 */
export async function copyThread(
  saver: RedisCheckpointer,
  sourceThreadId: string,
  targetThreadId: string,
): Promise<void> {
  if (sourceThreadId === targetThreadId) return;
  await saver.deleteThread(targetThreadId);
  const plan = () => planCopy(saver, sourceThreadId, targetThreadId);
  await changeAtomically(saver.redis, saver.keys.changes(sourceThreadId), plan, { changesWatched: false });
}

/** What `copySnapshotScript` returns: the change counter, then per scope its ids, write ids and metadata. */
type CopySnapshot = [Buffer | null, [Buffer, Buffer[], Buffer[], Buffer[], Buffer[]][]];

/** The source as one script read it (so only this planning races the thread's writes), to copy. */
async function planCopy(saver: RedisCheckpointer, sourceThreadId: string, targetThreadId: string): Promise<Plan> {
  const [seen, snapshot] = (await copySnapshotScript.run(
    saver.redis,
    [saver.keys.scopesOf(sourceThreadId), saver.keys.changes(sourceThreadId)],
    [saver.keys.base],
  )) as CopySnapshot;
  const plans = await Promise.all(
    snapshot.map(async ([scopeBytes, idBytes, writeIdBytes, metadataBytes, metadataTypes]) => {
      const scope = scopeBytes.toString();
      const ids = idBytes.map(String);
      const metadata = await Promise.all(
        ids.map(async (id, index) => {
          const [bytes, type] = [metadataBytes[index], metadataTypes[index]?.toString()];
          if (!bytes?.length || !type) return undefined;
          const decoded = (await saver.serde.loadsTyped(type, bytes)) as CheckpointMetadata;
          if (!("thread_id" in decoded)) return undefined;
          const [, rewritten] = await saver.serde.dumpsTyped({ ...decoded, thread_id: targetThreadId });
          return [id, Buffer.from(rewritten)] as const;
        }),
      );
      const target = scopeOf(targetThreadId, namespaceOfScope(scope));
      return { scope, target, ids, writeIds: writeIdBytes.map(String), metadata };
    }),
  );
  const changes = new Plan();
  for (const { scope, target, ids, writeIds, metadata } of plans) {
    for (const id of ids) changes.copy(saver.keys.checkpoint(scope, id), saver.keys.checkpoint(target, id));
    for (const id of writeIds) changes.copy(saver.keys.writes(scope, id), saver.keys.writes(target, id));
    for (const rewritten of metadata) {
      if (rewritten) changes.hSet(saver.keys.checkpoint(target, rewritten[0]), "metadata", rewritten[1]);
    }
    changes
      .copy(saver.keys.ids(scope), saver.keys.ids(target))
      .copy(saver.keys.writeIds(scope), saver.keys.writeIds(target))
      .copy(saver.keys.blobs(scope), saver.keys.blobs(target))
      .copy(saver.keys.packedWrites(scope), saver.keys.packedWrites(target))
      .copy(saver.keys.segments(scope), saver.keys.segments(target))
      .sAdd(saver.keys.scopesOf(targetThreadId), target);
  }
  if (plans.length > 0) changes.sAdd(saver.keys.threads(), targetThreadId);
  changes.basedOn = seen?.toString() ?? "";
  return changes;
}

/**
 * Keeps the latest root checkpoint with its pending writes and the channel versions it reads,
 * plus the latest checkpoint of subgraphs that root still has pending tasks for; planned again
 * when the thread is written meanwhile, so a checkpoint put in between keeps its channel values.
 */
export function pruneThread(saver: RedisCheckpointer, threadId: string): Promise<void> {
  return changeAtomically(saver.redis, saver.keys.changes(threadId), () => planPrune(saver, threadId));
}

async function planPrune(saver: RedisCheckpointer, threadId: string): Promise<Plan> {
  const scopes = await members(saver.redis, saver.keys.scopesOf(threadId));
  const rootScope = scopeOf(threadId, "");
  const rootLatest = latestId(await members(saver.redis, saver.keys.ids(rootScope), "zset"));
  const rootWrites = rootLatest ? await readWrites(saver, rootScope, rootLatest) : [];
  const pendingTaskIds = new Set(rootWrites.map(([field]) => parseWriteField(field).taskId));
  const keep = namespacesToKeep(scopes.map(namespaceOfScope), pendingTaskIds);
  const changes = new Plan();
  for (const scope of scopes) {
    const [ids, writeIds, blobFields, packedIds, segments] = await Promise.all([
      members(saver.redis, saver.keys.ids(scope), "zset"),
      members(saver.redis, saver.keys.writeIds(scope)),
      saver.redis.hKeys(saver.keys.blobs(scope)),
      saver.redis.hKeys(saver.keys.packedWrites(scope)),
      saver.cold.names(scope),
    ]);
    const kept = keep.has(namespaceOfScope(scope)) ? latestId(ids) : undefined;
    const [record] = kept ? await readRecords(saver, [saver.keys.checkpoint(scope, kept)]) : [];
    const keptBlobs = await withDeltaBases(
      saver,
      scope,
      blobListOf(record ?? null)
        .split("\0")
        .filter(Boolean),
    );
    for (const id of ids)
      if (id !== kept) changes.unlink(saver.keys.checkpoint(scope, id)).zRem(saver.keys.ids(scope), id);
    for (const id of writeIds)
      if (id !== kept) changes.unlink(saver.keys.writes(scope, id)).sRem(saver.keys.writeIds(scope), id);
    const stalePacked = packedIds.map(String).filter((id) => id !== kept);
    if (stalePacked.length > 0) changes.hDel(saver.keys.packedWrites(scope), stalePacked);
    const staleBlobs = blobFields.filter((field) => !keptBlobs.has(field.toString()));
    if (staleBlobs.length > 0) changes.hDel(saver.keys.blobs(scope), staleBlobs);
    // The kept checkpoint is the latest, never cold, and so is every version it reads.
    if (segments.length > 0) changes.unlink(saver.keys.segments(scope));
    if (!kept) changes.sRem(saver.keys.scopesOf(threadId), scope);
  }
  return changes;
}

/**
 * Deletes the checkpoints whose metadata names the run, their writes and the channel versions
 * only they read, plus the writes the run left on the newest remaining checkpoint of each
 * namespace (a resume value, input writes): the thread is as it was before the run.
 */
export async function deleteRun(saver: RedisCheckpointer, threadId: string, runId: string): Promise<void> {
  for (const scope of await members(saver.redis, saver.keys.scopesOf(threadId))) {
    if (await involvedInDelete(saver.cold, threadId, scope, runId)) {
      await changeAtomically(saver.redis, saver.keys.changes(threadId), () => planThaw(saver.cold, scope));
    }
  }
  return changeAtomically(saver.redis, saver.keys.changes(threadId), () => planDeleteRun(saver, threadId, runId));
}

async function planDeleteRun(saver: RedisCheckpointer, threadId: string, runId: string): Promise<Plan> {
  const scopes = await members(saver.redis, saver.keys.scopesOf(threadId));
  const changes = new Plan();
  for (const scope of scopes) {
    const ids = await members(saver.redis, saver.keys.ids(scope), "zset");
    const records = await readRecords(
      saver,
      ids.map((id) => saver.keys.checkpoint(scope, id)),
    );
    const kept: string[] = [];
    const keptBlobs = new Set<string>();
    for (const [index, raw] of records.entries()) {
      const id = ids[index] as string;
      if ((await runIdOfRecord(saver.serde, threadId, id, raw)) === runId) {
        changes
          .unlink([saver.keys.checkpoint(scope, id), saver.keys.writes(scope, id)])
          .zRem(saver.keys.ids(scope), id)
          .sRem(saver.keys.writeIds(scope), id)
          .hDel(saver.keys.packedWrites(scope), [id]);
        continue;
      }
      kept.push(id);
      for (const field of blobListOf(raw).split("\0")) if (field) keptBlobs.add(field);
    }
    if (kept.length === 0) {
      changes
        .unlink([saver.keys.ids(scope), saver.keys.writeIds(scope), saver.keys.blobs(scope)])
        .unlink(saver.keys.packedWrites(scope))
        .sRem(saver.keys.scopesOf(threadId), scope);
      continue;
    }
    const newest = latestId(kept) as string;
    const legacy = await saver.redis.hGetAll(saver.keys.writes(scope, newest));
    const ofRun = (frame: Buffer) => decodeWriteFrame(frame).header.run_id === runId;
    const runWrites = Object.entries(legacy)
      .filter(([, frame]) => ofRun(frame as Buffer))
      .map(([field]) => field);
    if (runWrites.length > 0) changes.hDel(saver.keys.writes(scope, newest), runWrites);
    const packed = await saver.redis.hGet(saver.keys.packedWrites(scope), newest);
    const entries = packed ? unpackEntries(packed) : [];
    const others = entries.filter(([, frame]) => !ofRun(frame));
    if (others.length === 0 && entries.length > 0) changes.hDel(saver.keys.packedWrites(scope), [newest]);
    else if (others.length < entries.length) changes.hSet(saver.keys.packedWrites(scope), newest, packEntries(others));
    if (kept.length < ids.length) {
      const needed = await withDeltaBases(saver, scope, keptBlobs);
      const stale = (await saver.redis.hKeys(saver.keys.blobs(scope)))
        .map((field) => field.toString())
        .filter((field) => !needed.has(field));
      if (stale.length > 0) changes.hDel(saver.keys.blobs(scope), stale);
    }
  }
  return changes;
}
