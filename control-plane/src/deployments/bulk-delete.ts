import { type HttpError, notFound } from "@agentplane/common";
import type { BulkDeleteResponse } from "./schemas.ts";

/**
 * The answer to a bulk DELETE from each deletion's outcome (in `ids` order): 200 when all started,
 * 207 when some did, 404 when none of the ids is a deployment of the tenant.
 */
export function bulkDeleteResult(
  ids: string[],
  outcomes: PromiseSettledResult<void>[],
): { status: number; body: BulkDeleteResponse } {
  const body: BulkDeleteResponse = { deleted: [], failed: [] };
  outcomes.forEach((outcome, index) => {
    const id = ids[index] ?? "";
    if (outcome.status === "fulfilled") body.deleted.push(id);
    else {
      const error = outcome.reason as HttpError;
      const detail = typeof error.detail === "string" ? error.detail : error.message;
      body.failed.push({ deployment_id: id, status: error.status, detail });
    }
  });
  if (body.deleted.length === 0 && body.failed.every((failure) => failure.status === 404)) {
    throw notFound(`Deployment IDs ${ids.join(", ")} not found.`);
  }
  return { status: body.failed.length === 0 ? 200 : 207, body };
}
