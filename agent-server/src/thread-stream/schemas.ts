import { isSupportedChannel } from "@langchain/langgraph/stream";
import { z } from "zod";
import { MultitaskStrategySchema, RunCreateStatefulSchema } from "../runs/schemas.ts";
import { MetadataSchema } from "../schemas/common.ts";
import { apiSchemas } from "../schemas/registry.ts";

/** Request shapes of the thread-centric protocol (SDK ≥ 1.13 `client.threads.stream`). */

const NamespaceSchema = z.array(z.string());

/** `POST /threads/{id}/stream/events`: which events this stream carries; strict, as the reference server's. */
export const EventStreamRequestSchema = z
  .object({
    channels: z
      .array(z.string())
      .min(1)
      .describe("values, updates, messages, tools, custom, custom:<name>, lifecycle, input, tasks, checkpoints"),
    namespaces: z.array(NamespaceSchema).optional().describe("Namespace prefixes (subgraphs); all when absent"),
    depth: z.number().int().nonnegative().optional().describe("How far below a prefix events are sent"),
    since: z.number().int().nonnegative().optional().describe("Sequence number: only later events (replay, then live)"),
  })
  .strict()
  .register(apiSchemas, { id: "ProtocolEventStreamRequest" });
export type EventStreamRequest = z.infer<typeof EventStreamRequestSchema>;

/** `POST /threads/{id}/commands`: one command; its `params` are checked per method. */
export const CommandSchema = z
  .object({
    id: z.number().int().nonnegative(),
    method: z.string().min(1),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .register(apiSchemas, { id: "ProtocolCommand" });
export type Command = z.infer<typeof CommandSchema>;

export const CommandResponseSchema = z
  .object({
    type: z.enum(["success", "error"]),
    id: z.number().int().nullable(),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.string().optional(),
    message: z.string().optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
  })
  .register(apiSchemas, { id: "ProtocolCommandResponse" });

/**
 * `run.start`: the options of `runs.create`, but streaming is the protocol's (all channels,
 * subgraphs, resumable) and the thread is created when missing. The SDK spells the strategy
 * both `multitaskStrategy` and `multitask_strategy`.
 */
export const RunStartParamsSchema = RunCreateStatefulSchema.omit({
  stream_mode: true,
  stream_subgraphs: true,
  stream_resumable: true,
  on_disconnect: true,
  if_not_exists: true,
}).extend({ multitaskStrategy: MultitaskStrategySchema.optional() });

const SendSchema = z.object({ node: z.string(), input: z.unknown() });

const ResumeFields = {
  update: z.union([z.record(z.string(), z.unknown()), z.array(z.tuple([z.string(), z.unknown()]))]).optional(),
  goto: z.union([z.string(), SendSchema, z.array(z.union([z.string(), SendSchema]))]).optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  metadata: MetadataSchema.optional(),
};

const ResponseEntrySchema = z.object({
  namespace: NamespaceSchema.optional(),
  interrupt_id: z.string().min(1),
  response: z.unknown(),
});

/** `input.respond`: one interrupt, or several pending at the same checkpoint resumed together. */
export const InputRespondParamsSchema = z.union([
  ResponseEntrySchema.extend(ResumeFields),
  z.object({ responses: z.array(ResponseEntrySchema).min(1), ...ResumeFields }),
]);
export type InputRespondParams = z.infer<typeof InputRespondParamsSchema>;

export const StateGetParamsSchema = z.object({
  namespace: NamespaceSchema.optional(),
  keys: z.array(z.string()).optional(),
});

export const ListCheckpointsParamsSchema = z.object({
  namespace: NamespaceSchema.optional(),
  limit: z.number().int().min(1).max(1000).optional(),
  before: z.string().optional(),
});

export const StateForkParamsSchema = z.object({
  checkpoint_id: z.string().min(1),
  input: z.unknown().optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  metadata: MetadataSchema.optional(),
});

/**
 * `subscription.subscribe` over the WebSocket: the filter of an event stream (open to extra
 * fields, as the protocol's `SubscribeParams`), channels checked against the protocol's, and
 * `since` to replay exactly after the last event a client saw.
 */
export const SubscribeParamsSchema = z.looseObject({
  channels: z.array(z.string().refine(isSupportedChannel, { message: "unsupported channel" })).min(1),
  namespaces: z.array(NamespaceSchema).optional(),
  depth: z.number().int().nonnegative().optional(),
  since: z.number().int().nonnegative().optional(),
});

/** `agent.getTree`: the tree of one of the thread's protocol runs, its latest by default. */
export const AgentGetTreeParamsSchema = z.looseObject({ run_id: z.string().min(1).optional() });

export const UnsubscribeParamsSchema = z.looseObject({ subscription_id: z.string().min(1) });
