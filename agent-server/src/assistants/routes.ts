import { type AnyRoute, defineRoute, unprocessable } from "@agentplane/common";
import { z } from "zod";
import { requestAuth } from "../custom-auth/module.ts";
import { sendPage } from "../schemas/pagination.ts";
import {
  AssistantCountSchema,
  AssistantCreateSchema,
  AssistantDeleteQuerySchema,
  AssistantLatestBodySchema,
  AssistantLatestQuerySchema,
  AssistantPatchSchema,
  AssistantPathSchema,
  AssistantSchema,
  AssistantSearchSchema,
  AssistantVersionSchema,
  AssistantVersionsSchema,
} from "./schemas.ts";
import type { AssistantService } from "./service.ts";

const tag = "Assistants";

export function assistantRoutes(service: AssistantService): AnyRoute[] {
  return [
    defineRoute({
      method: "post",
      path: "/assistants",
      operationId: "create_assistant",
      tag,
      summary: "Create an assistant",
      body: AssistantCreateSchema,
      response: AssistantSchema,
      errors: [404, 409],
      handler: ({ body, req }) => service.create(body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/assistants/search",
      operationId: "search_assistants",
      tag,
      summary: "Search assistants (X-Pagination-Total / X-Pagination-Next headers)",
      body: AssistantSearchSchema,
      response: z.array(AssistantSchema),
      handler: async ({ body, req, res }) =>
        sendPage(res, body.offset, await service.search(body, requestAuth(req)), body.select),
    }),
    defineRoute({
      method: "post",
      path: "/assistants/count",
      operationId: "count_assistants",
      tag,
      summary: "Count assistants",
      body: AssistantCountSchema,
      response: z.number().int(),
      handler: ({ body, req }) => service.count(body, requestAuth(req)),
    }),
    defineRoute({
      method: "get",
      path: "/assistants/:assistant_id",
      operationId: "get_assistant",
      tag,
      summary: "Get an assistant (by id or graph id)",
      params: AssistantPathSchema,
      response: AssistantSchema,
      errors: [404],
      handler: ({ params, req }) => service.get(params.assistant_id, requestAuth(req)),
    }),
    defineRoute({
      method: "patch",
      path: "/assistants/:assistant_id",
      operationId: "patch_assistant",
      tag,
      summary: "Update an assistant, writing a new version",
      params: AssistantPathSchema,
      body: AssistantPatchSchema,
      response: AssistantSchema,
      errors: [404],
      handler: ({ params, body, req }) => service.patch(params.assistant_id, body, requestAuth(req)),
    }),
    defineRoute({
      method: "delete",
      path: "/assistants/:assistant_id",
      operationId: "delete_assistant",
      tag,
      summary: "Delete an assistant (and with delete_threads=true its threads)",
      params: AssistantPathSchema,
      query: AssistantDeleteQuerySchema,
      response: z.array(z.uuid()),
      errors: [404],
      handler: async ({ params, query, req }) => [
        await service.delete(params.assistant_id, { deleteThreads: query.delete_threads }, requestAuth(req)),
      ],
    }),
    defineRoute({
      method: "post",
      path: "/assistants/:assistant_id/versions",
      operationId: "get_assistant_versions",
      tag,
      summary: "List an assistant's versions, newest first",
      params: AssistantPathSchema,
      body: AssistantVersionsSchema,
      response: z.array(AssistantVersionSchema),
      errors: [404],
      handler: ({ params, body, req }) => service.versions(params.assistant_id, body, requestAuth(req)),
    }),
    defineRoute({
      method: "post",
      path: "/assistants/:assistant_id/latest",
      operationId: "set_latest_assistant_version",
      tag,
      summary: "Make a version current (JSON body {version} or ?version=)",
      params: AssistantPathSchema,
      query: AssistantLatestQuerySchema,
      body: AssistantLatestBodySchema,
      response: AssistantSchema,
      errors: [404],
      handler: async ({ params, query, body, req }) => {
        const version = body.version ?? query.version;
        if (version === undefined) {
          throw unprocessable([{ loc: ["body", "version"], msg: "Field required", type: "missing" }]);
        }
        return service.setLatest(params.assistant_id, version, requestAuth(req));
      },
    }),
  ];
}
