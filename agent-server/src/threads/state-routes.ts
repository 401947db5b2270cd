import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../custom-auth/module.ts";
import { QueryBoolean } from "../http/query.ts";
import { sendJsonParts } from "../http/send-json.ts";
import { CheckpointConfigSchema as CheckpointConfig } from "../runs/schemas.ts";
import { apiSchemas } from "../schemas/registry.ts";
import type { ThreadService } from "./service.ts";
import type { ThreadState } from "./state.ts";

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
    checkpoint_id: z.string().nullish(),
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

/** State, state update and history endpoints of threads. */
export function threadStateRoutes(service: ThreadService): AnyRoute[] {
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
      handler: async ({ params, query, req, res }) =>
        sendJsonParts(res, await service.stateJson(params.thread_id, {}, query.subgraphs, requestAuth(req))),
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
      handler: async ({ params, body, req }) => {
        const checkpoint = await service.updateState(params.thread_id, body, requestAuth(req));
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
      handler: async ({ params, query, req, res }) => {
        const selector = { checkpoint_id: params.checkpoint_id };
        sendJsonParts(res, await service.stateJson(params.thread_id, selector, query.subgraphs, requestAuth(req)));
      },
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
      handler: async ({ params, body, req, res }) =>
        sendJsonParts(
          res,
          await service.stateJson(params.thread_id, body.checkpoint, body.subgraphs, requestAuth(req)),
        ),
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
      handler: async ({ params, query, req, res }) =>
        sendJsonParts(res, await service.historyJson(params.thread_id, query, requestAuth(req))),
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
      handler: async ({ params, body, req, res }) =>
        sendJsonParts(res, await service.historyJson(params.thread_id, body, requestAuth(req))),
    }),
  ];
}
