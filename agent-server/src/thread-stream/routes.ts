import { type AnyRoute, defineRoute, HttpError, type Logger } from "@agentplane/common";
import { z } from "zod";
import type { ServerModule } from "../app.ts";
import { requestAuth } from "../custom-auth/module.ts";
import { forwardedHeaders } from "../http/configurable-headers.ts";
import type { RunService } from "../runs/service.ts";
import type { RunEventLog } from "../stream/event-log.ts";
import type { ThreadService } from "../threads/service.ts";
import { CommandResponseSchema, CommandSchema, EventStreamRequestSchema } from "./schemas.ts";
import { ThreadProtocolService } from "./service.ts";
import { ProtocolSockets } from "./sockets.ts";
import { streamProtocolEvents } from "./stream.ts";

const ThreadParamsSchema = z.object({ thread_id: z.uuid() });

export interface ThreadStreamRoutesOptions {
  heartbeatMs: number;
  stallMs: number;
  logger: Logger;
}

/** A numeric `Last-Event-ID` (a generic SSE client reconnecting) stands for `since`. */
const lastEventId = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d+$/.test(header) ? Number(header) : undefined;

/** The thread-centric protocol over HTTP: commands, and filtered SSE event streams. */
export function threadStreamRoutes(
  protocol: ThreadProtocolService,
  runs: RunService,
  threads: ThreadService,
  events: RunEventLog,
  options: ThreadStreamRoutesOptions,
): AnyRoute[] {
  const tag = "Thread Stream";
  return [
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/commands",
      operationId: "thread_command",
      tag,
      summary: "Run a protocol command (run.start, input.respond, state.get, state.listCheckpoints, state.fork)",
      params: ThreadParamsSchema,
      body: CommandSchema,
      response: CommandResponseSchema,
      errors: [404, 409],
      handler: async ({ params, body, req, res }) => {
        const { status, body: answer } = await protocol.handle(
          params.thread_id,
          body,
          forwardedHeaders(req),
          requestAuth(req),
        );
        res.status(status).json(answer);
      },
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/stream/events",
      operationId: "thread_stream_events",
      tag,
      summary: "Stream the thread's protocol events (SSE), filtered by channel and namespace, from `since` on",
      params: ThreadParamsSchema,
      body: EventStreamRequestSchema,
      errors: [404],
      handler: async ({ params, body, req, res }) => {
        // Before the SSE headers: an unknown thread (or another user's) is still a 404.
        await threads.get(params.thread_id, requestAuth(req));
        const filter = {
          channels: new Set(body.channels),
          namespaces: body.namespaces,
          depth: body.depth,
          since: body.since ?? lastEventId(req.header("last-event-id")),
        };
        await streamProtocolEvents(runs, events, res, params.thread_id, filter, options);
      },
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/stream/events",
      operationId: "thread_stream_websocket",
      tag,
      summary:
        "WebSocket (Upgrade: websocket): commands, and events of `subscription.subscribe` (channels, namespaces, depth, since)",
      params: ThreadParamsSchema,
      errors: [426],
      // Upgrade requests are accepted before the routes (`ProtocolSockets.accept`); a plain GET ends here.
      handler: () => {
        throw new HttpError(426, "Connect with a WebSocket (Upgrade: websocket), or POST for server-sent events");
      },
    }),
  ];
}

/** Unsent bytes a WebSocket may hold before its events wait for the client. */
const SOCKET_BUFFER_BYTES = 1024 * 1024;

const UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** `BODY_LIMIT` (`512kb`, `10mb`, a byte count: the config checks the form) in bytes. */
const byteSize = (limit: string) => {
  const [, count, unit] = /^(\d+)([a-z]*)$/i.exec(limit) ?? [];
  return Number(count) * (UNITS[(unit || "b").toLowerCase()] ?? 1);
};

/** The protocol's routes; runs and threads come from their modules once started. */
export function threadStreamModule(deps: {
  runs: () => RunService;
  events: () => RunEventLog;
  threads: () => ThreadService;
  /** `heartbeatMs` (STREAM_HEARTBEAT_MS), and `stallMs` (STREAM_STALL_TIMEOUT_MS): as for SSE run streams. */
  settings: { heartbeatMs: number; stallMs: number };
}): ServerModule {
  let protocol: ThreadProtocolService | undefined;
  const service = () => {
    protocol ??= new ThreadProtocolService(deps.runs(), deps.threads(), deps.events());
    return protocol;
  };
  return {
    name: "thread-stream",
    // WebSocket upgrades, after authentication (API keys, custom auth) like every request.
    middleware: (ctx) => [
      new ProtocolSockets(service(), deps.runs(), deps.events(), deps.threads(), {
        heartbeatMs: deps.settings.heartbeatMs,
        bufferLimit: SOCKET_BUFFER_BYTES,
        stallMs: deps.settings.stallMs,
        maxPayload: byteSize(ctx.config.bodyLimit),
        logger: ctx.logger,
      }).accept(),
    ],
    routes: (ctx) =>
      threadStreamRoutes(service(), deps.runs(), deps.threads(), deps.events(), {
        heartbeatMs: deps.settings.heartbeatMs,
        stallMs: deps.settings.stallMs,
        logger: ctx.logger,
      }),
  };
}
