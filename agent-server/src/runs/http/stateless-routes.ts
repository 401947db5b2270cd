import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../../custom-auth/module.ts";
import { forwardedHeaders } from "../../http/configurable-headers.ts";
import {
  JoinStreamQuerySchema,
  type Run,
  RunBatchCreateSchema,
  RunCreateStatelessSchema,
  RunIdParamsSchema,
  RunResultSchema,
  RunSchema,
} from "../schemas.ts";
import type { RunService } from "../service.ts";
import type { RunHandlers } from "./handlers.ts";

const tag = "Stateless Runs";

/** Runs on temporary threads: `/runs`, `/runs/stream`, `/runs/wait`, `/runs/batch`, `/runs/{id}/stream`. */
export function statelessRunRoutes(service: RunService, { create, stream, wait, joinStream }: RunHandlers): AnyRoute[] {
  return [
    defineRoute({
      method: "post",
      path: "/runs",
      operationId: "create_stateless_run",
      tag,
      summary: "Create a run on a temporary thread",
      body: RunCreateStatelessSchema,
      response: RunSchema,
      errors: [404],
      handler: ({ body, req, res }) => create(undefined, body, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/runs/stream",
      operationId: "stream_stateless_run",
      tag,
      summary: "Create a run on a temporary thread and stream its output (SSE)",
      body: RunCreateStatelessSchema,
      errors: [404],
      handler: ({ body, req, res }) => stream(undefined, body, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/runs/wait",
      operationId: "wait_stateless_run",
      tag,
      summary: "Create a run on a temporary thread and wait for its final values",
      body: RunCreateStatelessSchema,
      response: RunResultSchema,
      errors: [404],
      handler: ({ body, req, res }) => wait(undefined, body, req, res),
    }),
    defineRoute({
      method: "post",
      path: "/runs/batch",
      operationId: "create_stateless_runs",
      tag,
      summary: "Create several runs on temporary threads",
      body: RunBatchCreateSchema,
      response: z.array(RunSchema),
      errors: [404],
      handler: async ({ body, req }) => {
        const runs: Run[] = [];
        for (const payload of body) {
          runs.push(await service.create(undefined, payload, forwardedHeaders(req), { auth: requestAuth(req) }));
        }
        return runs;
      },
    }),
    defineRoute({
      method: "get",
      path: "/runs/:run_id/stream",
      operationId: "join_stateless_run_stream",
      tag,
      summary: "Stream a run's output by run id alone (SSE)",
      params: RunIdParamsSchema,
      query: JoinStreamQuerySchema,
      errors: [404],
      handler: ({ params, query, req, res }) => joinStream(undefined, params.run_id, query, req, res),
    }),
  ];
}
