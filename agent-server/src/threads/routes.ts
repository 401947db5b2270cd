import { type AnyRoute, defineRoute, notFound } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { sendPage } from "../schemas/pagination.ts";
import type { Thread } from "../storage/types.ts";
import {
  ThreadCountSchema,
  ThreadCreateSchema,
  ThreadGetQuerySchema,
  ThreadPatchSchema,
  ThreadPathSchema,
  ThreadPruneResponseSchema,
  ThreadPruneSchema,
  ThreadSchema,
  ThreadSearchSchema,
} from "./schemas.ts";
import { applySupersteps } from "./state.ts";
import { readThreadTtlSettings, threadView } from "./ttl.ts";

const tag = "Threads";

export interface ThreadRoutesOptions {
  /** Called after a thread was deleted, to stop and delete its runs. */
  onDelete?: (threadId: string) => Promise<void>;
}

/**
 * Deletes a thread as `DELETE /threads/{id}` does: the record first, so a failure part-way never
 * leaves a thread without its checkpoints, and no run can be created on it while its runs are
 * stopped and deleted.
 */
export function threadRemover(ctx: ServerContext, options: ThreadRoutesOptions) {
  const { threads, checkpointer } = ctx.storage;
  return async (threadId: string, expected?: Thread): Promise<boolean> => {
    const deleted = expected ? await threads.deleteIfUnchanged(expected) : await threads.delete(threadId);
    // Unconditionally, checkpoints a thread left behind go too; conditionally, a thread that
    // changed meanwhile keeps everything.
    if (deleted || !expected) await checkpointer.deleteThread(threadId);
    if (deleted) await options.onDelete?.(threadId);
    return deleted;
  };
}

export function threadRoutes(ctx: ServerContext, options: ThreadRoutesOptions = {}): AnyRoute[] {
  const { threads, checkpointer } = ctx.storage;
  const { defaultTtl } = readThreadTtlSettings(ctx.config.configPath);

  const load = async (threadId: string): Promise<Thread> => {
    const thread = await threads.get(threadId);
    if (!thread) throw notFound(`Thread with ID ${threadId} not found`);
    return thread;
  };
  const remove = threadRemover(ctx, options);

  return [
    defineRoute({
      method: "post",
      path: "/threads",
      operationId: "create_thread",
      tag,
      summary: "Create a thread (optionally replaying supersteps into it)",
      body: ThreadCreateSchema,
      response: ThreadSchema,
      errors: [400, 404, 409],
      handler: async ({ body }) => {
        const { supersteps, ...input } = body;
        if (input.thread_id && input.if_exists === "do_nothing") {
          const existing = await threads.get(input.thread_id);
          if (existing) return threadView(existing);
        }
        const thread = await threads.create({ ...input, ttl: input.ttl ?? defaultTtl });
        if (!supersteps?.length) return threadView(thread);
        try {
          return threadView(await applySupersteps(ctx, thread, supersteps));
        } catch (error) {
          await remove(thread.thread_id);
          throw error;
        }
      },
    }),
    defineRoute({
      method: "post",
      path: "/threads/search",
      operationId: "search_threads",
      tag,
      summary: "Search threads (X-Pagination-Total / X-Pagination-Next headers)",
      body: ThreadSearchSchema,
      response: z.array(ThreadSchema),
      handler: async ({ body, res }) => {
        const page = await threads.search(body);
        return sendPage(
          res,
          body.offset,
          { ...page, items: page.items.map((thread) => threadView(thread)) },
          body.select,
        );
      },
    }),
    defineRoute({
      method: "post",
      path: "/threads/count",
      operationId: "count_threads",
      tag,
      summary: "Count threads",
      body: ThreadCountSchema,
      response: z.number().int(),
      handler: ({ body }) => threads.count(body),
    }),
    defineRoute({
      method: "post",
      path: "/threads/prune",
      operationId: "prune_threads",
      tag,
      summary: "Delete threads, or keep only their latest checkpoint",
      body: ThreadPruneSchema,
      response: ThreadPruneResponseSchema,
      handler: async ({ body }) => {
        let pruned = 0;
        for (const threadId of new Set(body.thread_ids)) {
          if (body.strategy === "delete") {
            if (await remove(threadId)) pruned++;
          } else if (await threads.get(threadId)) {
            await checkpointer.pruneThread(threadId);
            pruned++;
          }
        }
        return { pruned_count: pruned };
      },
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id",
      operationId: "get_thread",
      tag,
      summary: "Get a thread",
      params: ThreadPathSchema,
      query: ThreadGetQuerySchema,
      response: ThreadSchema,
      errors: [404],
      handler: async ({ params, query }) =>
        threadView(await load(params.thread_id), [query.include ?? []].flat().includes("ttl")),
    }),
    defineRoute({
      method: "patch",
      path: "/threads/:thread_id",
      operationId: "patch_thread",
      tag,
      summary: "Merge metadata into a thread, set or remove its TTL",
      params: ThreadPathSchema,
      body: ThreadPatchSchema,
      response: ThreadSchema,
      errors: [404],
      handler: async ({ params, body }) => {
        const updated = await threads.update(params.thread_id, { metadata: body.metadata ?? {}, ttl: body.ttl });
        if (!updated) throw notFound(`Thread with ID ${params.thread_id} not found`);
        return threadView(updated);
      },
    }),
    defineRoute({
      method: "delete",
      path: "/threads/:thread_id",
      operationId: "delete_thread",
      tag,
      summary: "Delete a thread, its checkpoints and its runs (running ones are cancelled)",
      params: ThreadPathSchema,
      status: 204,
      response: null,
      errors: [404],
      handler: async ({ params }) => {
        if (!(await remove(params.thread_id))) throw notFound(`Thread with ID ${params.thread_id} not found`);
      },
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/copy",
      operationId: "copy_thread",
      tag,
      summary: "Copy a thread with all its checkpoints to a new thread id",
      params: ThreadPathSchema,
      response: ThreadSchema,
      errors: [404],
      handler: async ({ params }) => {
        const source = await load(params.thread_id);
        const threadId = uuidv7();
        const ttl = source.ttl ? { strategy: source.ttl.strategy, ttl: source.ttl.ttl_minutes } : defaultTtl;
        await threads.create({ thread_id: threadId, metadata: { ...source.metadata, thread_id: threadId }, ttl });
        await checkpointer.copyThread(source.thread_id, threadId);
        const copy = await threads.update(threadId, {
          values: source.values,
          interrupts: source.interrupts,
          config: source.config,
          state_updated: true,
        });
        return threadView(copy ?? (await load(threadId)));
      },
    }),
  ];
}
