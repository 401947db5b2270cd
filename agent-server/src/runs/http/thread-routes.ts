import { type AnyRoute, defineRoute, type Logger } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../../custom-auth/module.ts";
import {
  BulkCancelBodySchema,
  BulkCancelQuerySchema,
  CancelQuerySchema,
  JoinQuerySchema,
  JoinStreamQuerySchema,
  type Run,
  RunCreateStatefulSchema,
  RunListQuerySchema,
  RunResultSchema,
  RunSchema,
  ThreadIdParamsSchema,
  ThreadRunParamsSchema,
  ThreadStreamQuerySchema,
} from "../schemas.ts";
import type { RunService } from "../service.ts";
import { runHandlers } from "./handlers.ts";
import { respondWithOutcome } from "./respond.ts";
import { statelessRunRoutes } from "./stateless-routes.ts";
import { streamThread } from "./thread-stream.ts";

export interface RunRoutesOptions {
  /** Silence on a stream or a wait after which keep-alive bytes are sent. */
  heartbeatMs: number;
  /** A streaming client that takes nothing for this long is disconnected. */
  stallMs: number;
  /** For failures after an answer has started (streams, waits). */
  logger: Logger;
}

const tag = "Thread Runs";

/** Every run endpoint: thread runs, stateless runs, joins, streams and cancels. */
export function runRoutes(service: RunService, { heartbeatMs, stallMs, logger }: RunRoutesOptions): AnyRoute[] {
  const handlers = runHandlers(service, { heartbeatMs, stallMs, logger });
  const { create, stream, wait, joinStream } = handlers;
  return [
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/runs",
      operationId: "create_run",
      tag,
      summary: "Create a run (queued; returns at once)",
      params: ThreadIdParamsSchema,
      body: RunCreateStatefulSchema,
      response: RunSchema,
      errors: [404, 409],
      handler: ({ params, body, req, res }) => create(params.thread_id, body, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/runs/stream",
      operationId: "stream_run",
      tag,
      summary: "Create a run and stream its output (SSE)",
      params: ThreadIdParamsSchema,
      body: RunCreateStatefulSchema,
      errors: [404, 409],
      handler: ({ params, body, req, res }) => stream(params.thread_id, body, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/runs/wait",
      operationId: "wait_run",
      tag,
      summary: "Create a run and wait for its final values",
      params: ThreadIdParamsSchema,
      body: RunCreateStatefulSchema,
      response: RunResultSchema,
      errors: [404, 409],
      handler: ({ params, body, req, res }) => wait(params.thread_id, body, req, res),
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/runs",
      operationId: "list_runs",
      tag,
      summary: "List a thread's runs, newest first",
      params: ThreadIdParamsSchema,
      query: RunListQuerySchema,
      response: z.array(RunSchema),
      errors: [404],
      handler: ({ params, query, req }) => service.list(params.thread_id, query, requestAuth(req)),
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/runs/:run_id",
      operationId: "get_run",
      tag,
      summary: "Get a run",
      params: ThreadRunParamsSchema,
      response: RunSchema,
      errors: [404],
      handler: ({ params, req }) => service.get(params.thread_id, params.run_id, requestAuth(req)),
    }),
    defineRoute({
      method: "delete",
      path: "/threads/:thread_id/runs/:run_id",
      operationId: "delete_run",
      tag,
      summary: "Delete a run that is not running",
      params: ThreadRunParamsSchema,
      status: 204,
      response: null,
      errors: [404, 409],
      handler: async ({ params, req }) =>
        service.delete(await service.get(params.thread_id, params.run_id, requestAuth(req), "threads:delete")),
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/runs/:run_id/join",
      operationId: "join_run",
      tag,
      summary: "Wait for a run to finish and return its final values",
      params: ThreadRunParamsSchema,
      query: JoinQuerySchema,
      response: RunResultSchema,
      errors: [404],
      handler: async ({ params, query, req, res }) => {
        const run = await service.get(params.thread_id, params.run_id, requestAuth(req));
        await respondWithOutcome(service, res, run, {
          headers: {},
          cancelOnDisconnect: query.cancel_on_disconnect,
          heartbeatMs,
          logger,
        });
      },
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/runs/:run_id/stream",
      operationId: "join_run_stream",
      tag,
      summary: "Stream a run's output (SSE); Last-Event-ID resumes, -1 replays everything",
      params: ThreadRunParamsSchema,
      query: JoinStreamQuerySchema,
      errors: [404],
      handler: ({ params, query, req, res }) => joinStream(params.thread_id, params.run_id, query, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/runs/:run_id/cancel",
      operationId: "cancel_run",
      tag,
      summary: "Cancel a run (interrupt keeps its work, rollback deletes it); 202, or 204 after it stopped with wait",
      params: ThreadRunParamsSchema,
      query: CancelQuerySchema,
      status: 202,
      response: null,
      errors: [404],
      handler: async ({ params, query, req, res }) => {
        const run = await service.get(params.thread_id, params.run_id, requestAuth(req), "threads:update");
        await service.cancel(run, query.action);
        if (!query.wait) {
          res.status(202).end();
          return;
        }
        const outcome = await service.outcome(run, AbortSignal.timeout(60_000), heartbeatMs);
        res.status(outcome ? 204 : 202).end();
      },
    }),
    defineRoute({
      method: "post",
      path: "/runs/cancel",
      operationId: "cancel_runs",
      tag,
      summary: "Cancel runs by id on a thread, or every pending/running run",
      query: BulkCancelQuerySchema,
      body: BulkCancelBodySchema,
      status: 204,
      response: null,
      errors: [404],
      handler: async ({ query, body, req }) => {
        const auth = requestAuth(req);
        let runs: Run[];
        if ("run_ids" in body) {
          runs = await Promise.all(
            body.run_ids.map((runId) => service.get(body.thread_id, runId, auth, "threads:update")),
          );
        } else {
          const inflight = await service.inflight(auth);
          runs = body.status === "all" ? inflight : inflight.filter((run) => run.status === body.status);
        }
        for (const run of runs) await service.cancel(run, query.action);
      },
    }),
    defineRoute({
      method: "get",
      path: "/threads/:thread_id/stream",
      operationId: "stream_thread",
      tag: "Threads",
      summary: "Stream the runs of the thread, current and future (SSE); Last-Event-ID resumes (`-`: from the start)",
      params: ThreadIdParamsSchema,
      query: ThreadStreamQuerySchema,
      errors: [404],
      handler: async ({ params, query, req, res }) => {
        // The thread must be the user's to read before anything of it streams.
        await service.thread(params.thread_id, requestAuth(req));
        await streamThread(service, res, params.thread_id, {
          heartbeatMs,
          stallMs,
          modes: query.stream_modes ?? query.stream_mode ?? ["run_modes"],
          lastEventId: req.header("last-event-id"),
          logger,
        });
      },
    }),
    ...statelessRunRoutes(service, handlers),
  ];
}
