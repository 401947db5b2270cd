import { defaultAssistantId } from "../assistants/resolve.ts";
import type { ServerContext } from "../context.ts";

/**
 * One system assistant per graph, with a stable uuid5 id, so clients can use a graph id
 * wherever an assistant id is expected. Existing ones are left as they are.
 */
export async function registerDefaultAssistants(ctx: ServerContext): Promise<void> {
  for (const graphId of ctx.graphs.ids()) {
    await ctx.storage.assistants.create({
      assistant_id: defaultAssistantId(graphId),
      graph_id: graphId,
      name: graphId,
      description: ctx.graphs.description(graphId) ?? null,
      metadata: { created_by: "system" },
      if_exists: "do_nothing",
    });
  }
}
