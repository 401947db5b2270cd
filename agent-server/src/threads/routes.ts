import { type AnyRoute, defineRoute, notFound } from "@agentplane/common";
import { v7 as uuidv7 } from "uuid";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { sendPage } from "../schemas/pagination.ts";
import type { Thread } from "../storage/types.ts";
import {
  ThreadCountSchema,
  ThreadCreateSchema,
  ThreadPatchSchema,
  ThreadPathSchema,
  ThreadPruneResponseSchema,
  ThreadPruneSchema,
  ThreadSchema,
  ThreadSearchSchema,
} from "./schemas.ts";
import { applySupersteps } from "./state.ts";

const tag = "Threads";

export interface ThreadRoutesOptions {
  /** Called after a thread was deleted, to stop and delete its runs. */
  onDelete?: (threadId: string) => Promise<void>;
}

export function threadRoutes(ctx: ServerContext, options: ThreadRoutesOptions = {}): AnyRoute[] {
  const { threads, checkpointer } = ctx.storage;

  const load = async (threadId: string): Promise<Thread> => {
    const thread = await threads.get(threadId);
    if (!thread) throw notFound(`Thread with ID ${threadId} not found`);
    return thread;
  };
  /**
   * The record first, so a failure part-way never leaves a thread without its checkpoints, and
   * no run can be created on it while its runs are stopped and deleted.
   */
  const remove = async (threadId: string): Promise<boolean> => {
    const deleted = await threads.delete(threadId);
    await checkpointer.deleteThread(threadId);
    if (deleted) await options.onDelete?.(threadId);
    return deleted;
  };

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
          if (existing) return existing;
        }
        const thread = await threads.create(input);
        if (!supersteps?.length) return thread;
        try {
          return await applySupersteps(ctx, thread, supersteps);
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
      handler: async ({ body, res }) => sendPage(res, body.offset, await threads.search(body), body.select),
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
      response: ThreadSchema,
      errors: [404],
      handler: ({ params }) => load(params.thread_id),
    }),
    defineRoute({
      method: "patch",
      path: "/threads/:thread_id",
      operationId: "patch_thread",
      tag,
      summary: "Merge metadata into a thread",
      params: ThreadPathSchema,
      body: ThreadPatchSchema,
      response: ThreadSchema,
      errors: [404],
      handler: async ({ params, body }) => {
        const updated = await threads.update(params.thread_id, { metadata: body.metadata ?? {} });
        if (!updated) throw notFound(`Thread with ID ${params.thread_id} not found`);
        return updated;
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
        await threads.create({ thread_id: threadId, metadata: { ...source.metadata, thread_id: threadId } });
        await checkpointer.copyThread(source.thread_id, threadId);
        const copy = await threads.update(threadId, {
          values: source.values,
          interrupts: source.interrupts,
          config: source.config,
          state_updated: true,
        });
        return copy ?? load(threadId);
      },
    }),
  ];
}
