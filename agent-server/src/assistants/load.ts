import type { ServerContext } from "../context.ts";
import { registerDefaultAssistants } from "../graphs/default-assistants.ts";
import type { Assistant } from "../storage/types.ts";
import { defaultAssistantId } from "./resolve.ts";

/**
 * The stored assistant. A graph's default assistant is created again when it is missing: they are
 * made at start-up, but Redis may have lost them since (restarted without persistence, flushed)
 * or a client deleted one, and a graph id must keep naming an assistant.
 */
export async function loadAssistant(ctx: ServerContext, assistantId: string): Promise<Assistant | undefined> {
  const stored = await ctx.storage.assistants.get(assistantId);
  if (stored || !ctx.graphs.ids().some((graphId) => defaultAssistantId(graphId) === assistantId)) return stored;
  await registerDefaultAssistants(ctx);
  return ctx.storage.assistants.get(assistantId);
}
