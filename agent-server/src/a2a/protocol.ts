import { z } from "zod";

/** A2A v0.3 JSON-RPC: the envelope, the params of the supported methods, the error codes. */

export const JSONRPC_ERRORS = {
  parse: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
} as const;

export class JsonRpcError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

export const RequestIdSchema = z.union([z.string(), z.number().int(), z.null()]);
export type RequestId = z.infer<typeof RequestIdSchema>;

export const EnvelopeSchema = z.object({
  jsonrpc: z.literal("2.0"),
  id: RequestIdSchema.optional(),
  method: z.string().min(1),
  params: z.unknown().optional(),
});

const PartSchema = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("text"), text: z.string() }),
  z.object({ kind: z.literal("data"), data: z.record(z.string(), z.unknown()) }),
  z.object({ kind: z.literal("file"), file: z.record(z.string(), z.unknown()) }),
]);

export const MessageSchema = z.object({
  kind: z.literal("message").optional(),
  messageId: z.string().min(1),
  role: z.enum(["user", "agent"]),
  parts: z.array(PartSchema).min(1),
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type A2AMessage = z.infer<typeof MessageSchema>;

export const SendParamsSchema = z.object({
  message: MessageSchema,
  configuration: z
    .object({ blocking: z.boolean().optional(), historyLength: z.number().int().min(0).optional() })
    .passthrough()
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export type SendParams = z.infer<typeof SendParamsSchema>;

export const TaskIdParamsSchema = z.object({ id: z.string().min(1), historyLength: z.number().int().optional() });

export type TaskState = "submitted" | "working" | "input-required" | "completed" | "canceled" | "failed";

export interface A2ATask {
  kind: "task";
  id: string;
  contextId: string;
  status: { state: TaskState; timestamp: string; message?: A2AMessage & { kind: "message" } };
  artifacts?: {
    artifactId: string;
    name: string;
    parts: ({ kind: "text"; text: string } | { kind: "data"; data: unknown })[];
  }[];
  metadata?: Record<string, unknown>;
}

/** The events `message/stream` sends. */
export type StreamEvent =
  | A2ATask
  | { kind: "status-update"; taskId: string; contextId: string; status: A2ATask["status"]; final: boolean }
  | {
      kind: "artifact-update";
      taskId: string;
      contextId: string;
      artifact: NonNullable<A2ATask["artifacts"]>[number];
      lastChunk: boolean;
    };

export const success = (id: RequestId, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });
export const failure = (id: RequestId, code: number, message: string) => ({
  jsonrpc: "2.0" as const,
  id,
  error: { code, message },
});

/** Parses `params` with `schema`, or throws JSON-RPC's invalid-params error naming the first problem. */
export function parseParams<S extends z.ZodType>(schema: S, params: unknown): z.output<S> {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new JsonRpcError(
    JSONRPC_ERRORS.invalidParams,
    `Invalid params: ${issue?.path.join(".") || "params"} ${issue?.message ?? ""}`.trim(),
  );
}
