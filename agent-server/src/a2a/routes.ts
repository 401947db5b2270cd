import { type AnyRoute, defineRoute, notFound } from "@agentplane/common";
import type { Request, Response } from "express";
import { z } from "zod";
import type { AssistantService } from "../assistants/service.ts";
import type { ServerContext } from "../context.ts";
import type { RequestAuth } from "../custom-auth/authorize.ts";
import { requestAuth } from "../custom-auth/module.ts";
import type { RunService } from "../runs/service.ts";
import type { Assistant } from "../storage/types.ts";
import { serverVersion } from "../system/versions.ts";
import type { ThreadService } from "../threads/service.ts";
import { A2AMethods } from "./methods.ts";
import {
  EnvelopeSchema,
  failure,
  JSONRPC_ERRORS,
  JsonRpcError,
  parseParams,
  type RequestId,
  SendParamsSchema,
  success,
} from "./protocol.ts";
import { fromV1SendParams, toV1StreamResponse, toV1Task } from "./v1.ts";

const tag = "A2A";

const requestId = (body: unknown): RequestId => {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === "string" || typeof id === "number" ? id : null;
};

/** Per-assistant options from `metadata.a2a`. */
const A2AOptions = z
  .object({ input_modes: z.array(z.string()).optional(), output_modes: z.array(z.string()).optional() })
  .catch({});

/**
 * The agent card of an assistant (pure), readable by v0.3 clients (`protocolVersion`, `url`,
 * `preferredTransport`) and v1.0 clients (`supportedInterfaces`, v1.0 preferred), both served
 * by the same JSON-RPC endpoint.
 */
export function agentCard(assistant: Assistant, baseUrl: string, description: string | undefined) {
  const options = A2AOptions.parse(assistant.metadata.a2a ?? {});
  const url = `${baseUrl}/a2a/${assistant.assistant_id}`;
  return {
    protocolVersion: "0.3.0",
    name: assistant.name,
    description: assistant.description ?? description ?? `LangGraph assistant of graph ${assistant.graph_id}`,
    url,
    preferredTransport: "JSONRPC",
    supportedInterfaces: ["1.0", "0.3"].map((protocolVersion) => ({
      url,
      protocolBinding: "JSONRPC",
      protocolVersion,
    })),
    version: serverVersion(),
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: options.input_modes ?? ["text/plain", "application/json"],
    defaultOutputModes: options.output_modes ?? ["text/plain", "application/json"],
    skills: [
      {
        id: assistant.graph_id,
        name: assistant.name,
        description: assistant.description ?? description ?? assistant.graph_id,
        tags: [assistant.graph_id],
      },
    ],
  };
}

/** The services the A2A methods are built on (available once their modules started). */
export interface A2AServices {
  runs: () => RunService;
  assistants: () => AssistantService;
  threads: () => ThreadService;
}

/** `POST /a2a/{assistant_id}` (JSON-RPC 2.0) and the agent cards. */
export function a2aRoutes(ctx: ServerContext, { runs, assistants, threads }: A2AServices): AnyRoute[] {
  const load = (idOrGraphId: string) => assistants().find(idOrGraphId);
  const baseUrl = (req: Request) => `${req.protocol}://${req.get("host")}`;

  async function answer(assistant: Assistant, body: unknown, res: Response, auth?: RequestAuth): Promise<unknown> {
    const envelope = EnvelopeSchema.safeParse(body);
    if (!envelope.success) {
      res
        .status(400)
        .json(failure(requestId(body), JSONRPC_ERRORS.invalidRequest, "Invalid Request: not a JSON-RPC 2.0 request"));
      return undefined;
    }
    const { id = null, method, params } = envelope.data;
    const methods = new A2AMethods(threads(), runs(), assistant, auth);
    const aborted = new AbortController();
    res.once("close", () => aborted.abort());
    try {
      // v0.3 method names answer in v0.3 shapes, v1.0 names (`SendMessage`, …) in v1.0 shapes.
      switch (method) {
        case "message/send":
          return success(id, await methods.send(parseParams(SendParamsSchema, params), aborted.signal));
        case "SendMessage":
          return success(id, { task: toV1Task(await methods.send(fromV1SendParams(params), aborted.signal)) });
        case "message/stream":
          await methods.stream(id, parseParams(SendParamsSchema, params), res, aborted.signal, (event) => event);
          return undefined;
        case "SendStreamingMessage":
          await methods.stream(id, fromV1SendParams(params), res, aborted.signal, toV1StreamResponse);
          return undefined;
        case "tasks/get":
          return success(id, await methods.get(params));
        case "GetTask":
          return success(id, toV1Task(await methods.get(params)));
        case "tasks/cancel":
          return success(id, await methods.cancel(params));
        case "CancelTask":
          return success(id, toV1Task(await methods.cancel(params)));
        default:
          return failure(id, JSONRPC_ERRORS.methodNotFound, `Method not found: ${method}`);
      }
    } catch (error) {
      if (error instanceof JsonRpcError) {
        if (res.headersSent) {
          res.end(`data: ${JSON.stringify(failure(id, error.code, error.message))}\n\n`);
          return undefined;
        }
        return failure(id, error.code, error.message);
      }
      ctx.logger.error({ err: error, method }, "A2A request failed");
      if (res.headersSent) {
        res.end(`data: ${JSON.stringify(failure(id, JSONRPC_ERRORS.internal, "Internal error"))}\n\n`);
        return undefined;
      }
      return failure(id, JSONRPC_ERRORS.internal, (error as Error).message);
    }
  }

  return [
    defineRoute({
      method: "post",
      path: "/a2a/:assistant_id",
      operationId: "a2a_post",
      tag,
      summary:
        "A2A JSON-RPC 2.0: message/send, message/stream (SSE), tasks/get, tasks/cancel, and their v1.0 names SendMessage, SendStreamingMessage, GetTask, CancelTask",
      params: z.object({ assistant_id: z.string().min(1) }),
      errors: [400, 404],
      handler: async ({ params, body, req, res }) => {
        const assistant = await load(params.assistant_id);
        if (!assistant) {
          const error = failure(
            requestId(body),
            JSONRPC_ERRORS.invalidParams,
            `Assistant ${params.assistant_id} not found`,
          );
          res.status(404).json(error);
          return undefined;
        }
        return answer(assistant, body, res, requestAuth(req));
      },
    }),
    defineRoute({
      method: "get",
      path: "/.well-known/agent-card.json",
      operationId: "a2a_agent_card",
      tag,
      summary: "A2A agent card of an assistant",
      query: z.object({ assistant_id: z.string().min(1) }),
      errors: [404],
      handler: async ({ query, req }) => {
        const assistant = await load(query.assistant_id);
        if (!assistant) throw notFound(`Assistant ${query.assistant_id} not found`);
        return agentCard(assistant, baseUrl(req), ctx.graphs.description(assistant.graph_id));
      },
    }),
  ];
}
