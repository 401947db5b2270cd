import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../custom-auth/module.ts";
import { sendPage } from "../schemas/pagination.ts";
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
import type { ThreadService } from "./service.ts";
import { threadView } from "./ttl.ts";

const tag = "Threads";

export function threadRoutes(service: ThreadService): AnyRoute[] {
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
      handler: async ({ body, req }) => threadView(await service.create(body, requestAuth(req))),
    }),
    defineRoute({
      method: "post",
      path: "/threads/search",
      operationId: "search_threads",
      tag,
      summary: "Search threads (X-Pagination-Total / X-Pagination-Next headers)",
      body: ThreadSearchSchema,
      response: z.array(ThreadSchema),
      handler: async ({ body, req, res }) => {
        const page = await service.search(body, requestAuth(req));
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
      handler: ({ body, req }) => service.count(body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/threads/prune",
      operationId: "prune_threads",
      tag,
      summary: "Delete threads, or keep only their latest checkpoint",
      body: ThreadPruneSchema,
      response: ThreadPruneResponseSchema,
      handler: async ({ body, req }) => ({
        pruned_count: await service.prune(body.thread_ids, body.strategy, requestAuth(req)),
      }),
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
      handler: async ({ params, query, req }) =>
        threadView(await service.get(params.thread_id, requestAuth(req)), [query.include ?? []].flat().includes("ttl")),
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
      handler: async ({ params, body, req }) =>
        threadView(await service.patch(params.thread_id, body, requestAuth(req))),
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
      handler: ({ params, req }) => service.delete(params.thread_id, requestAuth(req)),
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
      handler: async ({ params, req }) => threadView(await service.copy(params.thread_id, requestAuth(req))),
    }),
  ];
}
