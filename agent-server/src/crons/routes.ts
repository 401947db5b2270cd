import { type AnyRoute, defineRoute } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../custom-auth/module.ts";
import {
  CronCountSchema,
  CronCreateSchema,
  CronParamsSchema,
  CronPatchSchema,
  CronSchema,
  CronSearchSchema,
  ThreadParamsSchema,
} from "./schemas.ts";
import type { CronService } from "./service.ts";

const tag = "Crons";

/** `/runs/crons*` and `/threads/{id}/runs/crons`. */
export function cronRoutes(service: () => CronService): AnyRoute[] {
  return [
    defineRoute({
      method: "post",
      path: "/runs/crons",
      operationId: "create_cron",
      tag,
      summary: "Schedule a stateless run (a new thread per execution)",
      body: CronCreateSchema,
      response: CronSchema,
      errors: [404],
      handler: ({ body, req }) => service().create(undefined, body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/threads/:thread_id/runs/crons",
      operationId: "create_thread_cron",
      tag,
      summary: "Schedule runs on a thread",
      params: ThreadParamsSchema,
      body: CronCreateSchema.omit({ on_run_completed: true }),
      response: CronSchema,
      errors: [404],
      handler: ({ params, body, req }) => service().create(params.thread_id, body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/runs/crons/search",
      operationId: "search_crons",
      tag,
      summary: "Search crons",
      body: CronSearchSchema,
      response: z.array(CronSchema.partial()),
      handler: ({ body, req }) => service().search(body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/runs/crons/count",
      operationId: "count_crons",
      tag,
      summary: "Count crons",
      body: CronCountSchema,
      response: z.number().int(),
      handler: ({ body, req }) => service().count(body, requestAuth(req)),
    }),
    defineRoute({
      method: "get",
      path: "/runs/crons/:cron_id",
      operationId: "get_cron",
      tag,
      summary: "Get a cron",
      params: CronParamsSchema,
      response: CronSchema,
      errors: [404],
      handler: ({ params, req }) => service().get(params.cron_id, requestAuth(req)),
    }),
    defineRoute({
      method: "patch",
      path: "/runs/crons/:cron_id",
      operationId: "update_cron",
      tag,
      summary: "Change a cron (metadata merges; end_time null clears it)",
      params: CronParamsSchema,
      body: CronPatchSchema,
      response: CronSchema,
      errors: [404],
      handler: ({ params, body, req }) => service().patch(params.cron_id, body, requestAuth(req)),
    }),
    defineRoute({
      method: "delete",
      path: "/runs/crons/:cron_id",
      operationId: "delete_cron",
      tag,
      summary: "Delete a cron",
      params: CronParamsSchema,
      response: null,
      status: 204,
      errors: [404],
      handler: async ({ params, req }) => {
        await service().delete(params.cron_id, requestAuth(req));
      },
    }),
  ];
}
