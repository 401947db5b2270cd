import { z } from "zod";
import type { A2ATask, SendParams, StreamEvent, TaskState } from "./protocol.ts";
import { JSONRPC_ERRORS, JsonRpcError, MessageSchema, parseParams } from "./protocol.ts";

/**
 * A2A v1.0 over JSON-RPC: the same methods under new names (`SendMessage`, `GetTask`, …) with the
 * proto3 JSON shapes of `lf.a2a.v1`. Parts carry their content in one field instead of a `kind`
 * (`{text}`, `{data}`, `{url}`, `{raw}`), enums are upper snake case (`ROLE_USER`,
 * `TASK_STATE_WORKING`), and send and stream results wrap the payload (`{task}`,
 * `{statusUpdate}`, `{artifactUpdate}`). Pure conversions to and from the v0.3 shapes the
 * methods work with.
 */

const PartSchema = z
  .object({
    text: z.string().optional(),
    data: z.unknown().optional(),
    url: z.string().optional(),
    raw: z.string().optional(),
    mediaType: z.string().optional(),
    filename: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((part) => ["text", "data", "url", "raw"].filter((key) => key in part).length === 1, {
    message: "a part holds exactly one of text, data, url or raw",
  });

const SendMessageRequestSchema = z.object({
  message: MessageSchema.omit({ kind: true }).extend({
    role: z.enum(["ROLE_USER", "ROLE_AGENT"]),
    parts: z.array(PartSchema).min(1),
  }),
  configuration: z
    .object({ returnImmediately: z.boolean().optional(), historyLength: z.number().int().min(0).optional() })
    .optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

type V1Part = z.infer<typeof PartSchema>;
type V0Part = SendParams["message"]["parts"][number];

function toV0Part(part: V1Part): V0Part {
  if (part.text !== undefined) return { kind: "text", text: part.text };
  if (part.data !== undefined) {
    if (part.data === null || typeof part.data !== "object" || Array.isArray(part.data)) {
      throw new JsonRpcError(
        JSONRPC_ERRORS.invalidParams,
        "Invalid params: message.parts data must be a JSON object (it is merged into the graph input)",
      );
    }
    return { kind: "data", data: part.data as Record<string, unknown> };
  }
  const file = { mimeType: part.mediaType, name: part.filename };
  return { kind: "file", file: part.url !== undefined ? { ...file, uri: part.url } : { ...file, bytes: part.raw } };
}

/** `SendMessage` / `SendStreamingMessage` params as the v0.3 `message/send` params they mean. */
export function fromV1SendParams(params: unknown): SendParams {
  const { message, configuration, metadata } = parseParams(SendMessageRequestSchema, params);
  return {
    message: {
      messageId: message.messageId,
      role: message.role === "ROLE_USER" ? "user" : "agent",
      parts: message.parts.map(toV0Part),
      // proto3 JSON may spell an unset string as "" (clients that emit default values).
      ...(message.contextId && { contextId: message.contextId }),
      ...(message.taskId && { taskId: message.taskId }),
      ...(message.metadata && { metadata: message.metadata }),
    },
    ...(configuration && {
      configuration: {
        blocking: !configuration.returnImmediately,
        ...(configuration.historyLength !== undefined && { historyLength: configuration.historyLength }),
      },
    }),
    ...(metadata && { metadata }),
  };
}

export const v1State = (state: TaskState): string => `TASK_STATE_${state.replace("-", "_").toUpperCase()}`;

const v1Parts = (parts: readonly ({ kind: "text"; text: string } | { kind: "data"; data: unknown })[]) =>
  parts.map((part) => (part.kind === "text" ? { text: part.text } : { data: part.data }));

type V0Artifact = NonNullable<A2ATask["artifacts"]>[number];

const v1Artifact = (artifact: V0Artifact) => ({ ...artifact, parts: v1Parts(artifact.parts) });

function v1Status(status: A2ATask["status"]) {
  const { message, ...rest } = status;
  return {
    ...rest,
    state: v1State(status.state),
    ...(message && {
      message: {
        messageId: message.messageId,
        contextId: message.contextId,
        taskId: message.taskId,
        role: "ROLE_AGENT",
        parts: v1Parts(message.parts.filter((part) => part.kind !== "file")),
      },
    }),
  };
}

export function toV1Task(task: A2ATask) {
  const { kind: _kind, status, artifacts, ...rest } = task;
  return { ...rest, status: v1Status(status), ...(artifacts && { artifacts: artifacts.map(v1Artifact) }) };
}

/** A `message/stream` event as the `StreamResponse` of `SendStreamingMessage`. */
export function toV1StreamResponse(event: StreamEvent) {
  switch (event.kind) {
    case "task":
      return { task: toV1Task(event) };
    case "status-update":
      return {
        statusUpdate: { taskId: event.taskId, contextId: event.contextId, status: v1Status(event.status) },
      };
    case "artifact-update":
      return {
        artifactUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          artifact: v1Artifact(event.artifact),
          lastChunk: event.lastChunk,
        },
      };
  }
}
