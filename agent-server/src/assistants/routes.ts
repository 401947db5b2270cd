import { type AnyRoute, defineRoute, notFound, unprocessable } from "@agentplane/common";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { sendPage } from "../schemas/pagination.ts";
import type { Assistant } from "../storage/types.ts";
import { assistantIdFromPath } from "./resolve.ts";
import {
  AssistantCountSchema,
  AssistantCreateSchema,
  AssistantDeleteQuerySchema,
  AssistantLatestBodySchema,
  AssistantLatestQuerySchema,
  AssistantPatchSchema,
  AssistantPathSchema,
  AssistantSchema,
  AssistantSearchSchema,
  AssistantVersionSchema,
  AssistantVersionsSchema,
} from "./schemas.ts";

const tag = "Assistants";
const THREAD_DELETE_BATCH = 1000;

export function assistantRoutes(ctx: ServerContext): AnyRoute[] {
  const { assistants } = ctx.storage;

  const requireGraph = (graphId: string) => {
    if (!ctx.graphs.has(graphId)) throw notFound(`Graph "${graphId}" not found`);
  };
  const found = (assistant: Assistant | undefined): Assistant => {
    if (!assistant) throw notFound("Assistant not found");
    return assistant;
  };
  const load = async (rawId: string) => found(await assistants.get(assistantIdFromPath(ctx, rawId)));

  /** Threads whose runs used the assistant (`metadata.assistant_id`), with their checkpoints. */
  const deleteThreadsOf = async (assistantId: string) => {
    const filter = { metadata: { assistant_id: assistantId } };
    for (;;) {
      const { items } = await ctx.storage.threads.search({
        ...filter,
        limit: THREAD_DELETE_BATCH,
        offset: 0,
        sort_by: "created_at",
        sort_order: "asc",
      });
      if (items.length === 0) return;
      for (const thread of items) {
        await ctx.storage.threads.delete(thread.thread_id);
        await ctx.storage.checkpointer.deleteThread(thread.thread_id);
      }
    }
  };

  return [
    defineRoute({
      method: "post",
      path: "/assistants",
      operationId: "create_assistant",
      tag,
      summary: "Create an assistant",
      body: AssistantCreateSchema,
      response: AssistantSchema,
      errors: [404, 409],
      handler: ({ body }) => {
        requireGraph(body.graph_id);
        return assistants.create(body);
      },
    }),
    defineRoute({
      method: "post",
      path: "/assistants/search",
      operationId: "search_assistants",
      tag,
      summary: "Search assistants (X-Pagination-Total / X-Pagination-Next headers)",
      body: AssistantSearchSchema,
      response: z.array(AssistantSchema),
      handler: async ({ body, res }) => sendPage(res, body.offset, await assistants.search(body), body.select),
    }),
    defineRoute({
      method: "post",
      path: "/assistants/count",
      operationId: "count_assistants",
      tag,
      summary: "Count assistants",
      body: AssistantCountSchema,
      response: z.number().int(),
      handler: ({ body }) => assistants.count(body),
    }),
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id",
      operationId: "get_assistant",
      tag,
      summary: "Get an assistant (by id or graph id)",
      params: AssistantPathSchema,
      response: AssistantSchema,
      errors: [404],
      handler: ({ params }) => load(params.assistant_id),
    }),
    defineRoute({
      method: "patch",
      path: "/assistants/:assistant_id",
      operationId: "patch_assistant",
      tag,
      summary: "Update an assistant, writing a new version",
      params: AssistantPathSchema,
      body: AssistantPatchSchema,
      response: AssistantSchema,
      errors: [404],
      handler: async ({ params, body }) => {
        const id = assistantIdFromPath(ctx, params.assistant_id);
        if (body.graph_id !== undefined) requireGraph(body.graph_id);
        return found(await assistants.patch(id, body));
      },
    }),
    defineRoute({
      method: "delete",
      path: "/assistants/:assistant_id",
      operationId: "delete_assistant",
      tag,
      summary: "Delete an assistant (and with delete_threads=true its threads)",
      params: AssistantPathSchema,
      query: AssistantDeleteQuerySchema,
      response: z.array(z.uuid()),
      errors: [404],
      handler: async ({ params, query }) => {
        const id = assistantIdFromPath(ctx, params.assistant_id);
        if (!(await assistants.delete(id))) throw notFound("Assistant not found");
        if (query.delete_threads) await deleteThreadsOf(id);
        return [id];
      },
    }),
    defineRoute({
      method: "post",
      path: "/assistants/:assistant_id/versions",
      operationId: "get_assistant_versions",
      tag,
      summary: "List an assistant's versions, newest first",
      params: AssistantPathSchema,
      body: AssistantVersionsSchema,
      response: z.array(AssistantVersionSchema),
      errors: [404],
      handler: async ({ params, body }) => {
        const { assistant_id } = await load(params.assistant_id);
        return assistants.versions(assistant_id, body);
      },
    }),
    defineRoute({
      method: "post",
      path: "/assistants/:assistant_id/latest",
      operationId: "set_latest_assistant_version",
      tag,
      summary: "Make a version current (JSON body {version} or ?version=)",
      params: AssistantPathSchema,
      query: AssistantLatestQuerySchema,
      body: AssistantLatestBodySchema,
      response: AssistantSchema,
      errors: [404],
      handler: async ({ params, query, body }) => {
        const version = body.version ?? query.version;
        if (version === undefined) {
          throw unprocessable([{ loc: ["body", "version"], msg: "Field required", type: "missing" }]);
        }
        const { assistant_id } = await load(params.assistant_id);
        const updated = await assistants.setLatest(assistant_id, version);
        if (!updated) throw notFound("Assistant version not found");
        return updated;
      },
    }),
  ];
}
