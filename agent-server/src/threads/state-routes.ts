import { type AnyRoute, badRequest, conflict, defineRoute, notFound } from "@agentplane/common";
import type { RunnableConfig } from "@langchain/core/runnables";
import { z } from "zod";
import type { ServerContext } from "../context.ts";
import { QueryBoolean } from "../http/query.ts";
import { CheckpointConfigSchema as CheckpointConfig } from "../runs/schemas.ts";
import { apiSchemas } from "../schemas/registry.ts";
import type { Thread } from "../storage/types.ts";
import {
  asClientError,
  emptyThreadState,
  syncThreadValues,
  type ThreadState,
  threadConfig,
  threadGraph,
  toApiCheckpoint,
  toThreadState,
} from "./state.ts";

const TAG = "Thread State";

const Interrupt = z.object({ id: z.string().optional(), value: z.unknown() });

const ApiCheckpoint = z.object({
  thread_id: z.string(),
  checkpoint_ns: z.string(),
  checkpoint_id: z.string().nullable(),
  checkpoint_map: z.record(z.string(), z.unknown()).nullable(),
});

type ThreadStateShape = z.ZodType<ThreadState>;
export const ThreadStateSchema: ThreadStateShape = z
  .object({
    values: z.unknown(),
    next: z.array(z.string()),
    get tasks() {
      return z.array(
        z.object({
          id: z.string(),
          name: z.string(),
          path: z.array(z.unknown()).nullable(),
          error: z.string().nullable(),
          interrupts: z.array(Interrupt),
          checkpoint: ApiCheckpoint.nullable(),
          state: ThreadStateSchema.nullable(),
          result: z.unknown(),
        }),
      );
    },
    checkpoint: ApiCheckpoint.nullable(),
    parent_checkpoint: ApiCheckpoint.nullable(),
    checkpoint_id: z.string().nullable(),
    parent_checkpoint_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string().nullable(),
    interrupts: z.array(Interrupt),
  })
  .register(apiSchemas, { id: "ThreadState", description: "A thread's state at one checkpoint." }) as ThreadStateShape;

const ThreadParams = z.object({ thread_id: z.uuid() });

export const ThreadStateUpdate = z
  .object({
    values: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).nullish(),
    as_node: z.string().optional(),
    checkpoint: CheckpointConfig.optional(),
    checkpoint_id: z.string().optional(),
  })
  .register(apiSchemas, { id: "ThreadStateUpdate" });

/** `checkpoint` per the API spec; `configurable` repeats it for clients typed after the JS SDK. */
const ThreadStateUpdateResponse = z
  .object({ checkpoint: ApiCheckpoint.nullable(), configurable: ApiCheckpoint.nullable() })
  .register(apiSchemas, { id: "ThreadStateUpdateResponse" });

const HistoryQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(10),
  before: z.string().optional(),
});

export const ThreadHistoryRequest = z
  .object({
    limit: z.number().int().min(1).max(1000).default(10),
    // A checkpoint id, a checkpoint, or (as the JS SDK types it) a config wrapping one.
    before: z.union([z.string(), z.object({ configurable: CheckpointConfig }), CheckpointConfig]).nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    checkpoint: CheckpointConfig.nullish(),
  })
  .register(apiSchemas, { id: "ThreadHistoryRequest" });

async function findThread(ctx: ServerContext, threadId: string): Promise<Thread> {
  const thread = await ctx.storage.threads.get(threadId);
  if (!thread) throw notFound(`Thread with ID ${threadId} not found`);
  return thread;
}

async function readState(
  ctx: ServerContext,
  threadId: string,
  checkpoint: z.infer<typeof CheckpointConfig>,
  subgraphs: boolean,
): Promise<ThreadState> {
  const thread = await findThread(ctx, threadId);
  const graph = await threadGraph(ctx, thread);
  if (!graph) return emptyThreadState();
  return toThreadState(await graph.getState(threadConfig(thread, checkpoint), { subgraphs }));
}

interface HistoryOptions {
  limit: number;
  before?: string | z.infer<typeof CheckpointConfig> | { configurable: z.infer<typeof CheckpointConfig> } | null;
  metadata?: Record<string, unknown> | null;
  checkpoint?: z.infer<typeof CheckpointConfig> | null;
}

function checkpointIdOf(before: HistoryOptions["before"]): string | undefined {
  if (!before) return undefined;
  if (typeof before === "string") return before;
  return "configurable" in before ? before.configurable.checkpoint_id : before.checkpoint_id;
}

async function readHistory(ctx: ServerContext, threadId: string, options: HistoryOptions): Promise<ThreadState[]> {
  const thread = await findThread(ctx, threadId);
  const graph = await threadGraph(ctx, thread);
  if (!graph) return [];
  const beforeId = checkpointIdOf(options.before);
  const beforeConfig: RunnableConfig | undefined = beforeId ? { configurable: { checkpoint_id: beforeId } } : undefined;
  const states: ThreadState[] = [];
  const history = graph.getStateHistory(threadConfig(thread, options.checkpoint ?? {}), {
    limit: options.limit,
    before: beforeConfig,
    filter: options.metadata ?? undefined,
  });
  for await (const snapshot of history) states.push(toThreadState(snapshot));
  return states;
}

/** State, state update and history endpoints of threads. */
export function threadStateRoutes(ctx: ServerContext): AnyRoute[] {
  return [
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/state",
      operationId: "get_latest_state_of_thread",
      tag: TAG,
      summary: "Get the latest state of a thread",
      params: ThreadParams,
      query: z.object({ subgraphs: QueryBoolean.default(false) }),
      response: ThreadStateSchema,
      errors: [404],
      handler: ({ params, query }) => readState(ctx, params.thread_id, {}, query.subgraphs),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/state",
      operationId: "update_thread_state",
      tag: TAG,
      summary: "Write a new checkpoint as if a node had produced the given values",
      params: ThreadParams,
      body: ThreadStateUpdate,
      response: ThreadStateUpdateResponse,
      errors: [400, 404, 409],
      handler: async ({ params, body }) => {
        const thread = await findThread(ctx, params.thread_id);
        if (thread.status === "busy") throw conflict("Thread is busy");
        const graph = await threadGraph(ctx, thread);
        if (!graph) throw badRequest(`Thread ${thread.thread_id} has no graph ID`);
        const target = { ...body.checkpoint, ...(body.checkpoint_id ? { checkpoint_id: body.checkpoint_id } : {}) };
        const next = await asClientError(() =>
          graph.updateState(
            threadConfig(thread, target, body.as_node ? { writes: { [body.as_node]: body.values ?? null } } : {}),
            body.values ?? null,
            body.as_node,
          ),
        );
        await syncThreadValues(ctx, thread, graph);
        const checkpoint = toApiCheckpoint(next);
        return { checkpoint, configurable: checkpoint };
      },
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/state/:checkpoint_id",
      operationId: "get_thread_state_at_checkpoint",
      tag: TAG,
      summary: "Get a thread's state at a checkpoint",
      params: ThreadParams.extend({ checkpoint_id: z.string().min(1) }),
      query: z.object({ subgraphs: QueryBoolean.default(false) }),
      response: ThreadStateSchema,
      errors: [404],
      handler: ({ params, query }) =>
        readState(ctx, params.thread_id, { checkpoint_id: params.checkpoint_id }, query.subgraphs),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/state/checkpoint",
      operationId: "post_thread_state_at_checkpoint",
      tag: TAG,
      summary: "Get a thread's state at a checkpoint (checkpoint in the body)",
      params: ThreadParams,
      body: z.object({ checkpoint: CheckpointConfig, subgraphs: z.boolean().default(false) }),
      response: ThreadStateSchema,
      errors: [404],
      handler: ({ params, body }) => readState(ctx, params.thread_id, body.checkpoint, body.subgraphs),
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/history",
      operationId: "get_thread_history",
      tag: TAG,
      summary: "List a thread's past states, newest first",
      params: ThreadParams,
      query: HistoryQuery,
      response: z.array(ThreadStateSchema),
      errors: [404],
      handler: ({ params, query }) => readHistory(ctx, params.thread_id, query),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/history",
      operationId: "get_thread_history_post",
      tag: TAG,
      summary: "List a thread's past states, newest first, with filters",
      params: ThreadParams,
      body: ThreadHistoryRequest,
      response: z.array(ThreadStateSchema),
      errors: [404],
      handler: ({ params, body }) => readHistory(ctx, params.thread_id, body),
    }),
  ];
}
