import type { AssistantService } from "../assistants/service.ts";
import type { ServerContext } from "../context.ts";
import type { RequestAuth } from "../custom-auth/authorize.ts";
import type { RunService } from "../runs/service.ts";
import type { RunOutcome } from "../runs/worker/settle.ts";
import type { Assistant, JsonObject } from "../storage/types.ts";

/** Tools are listed from at most this many assistants (oldest first). */
const MAX_TOOLS = 1000;

export interface AssistantTool {
  name: string;
  description: string;
  inputSchema: JsonObject & { type: "object" };
  assistant: Assistant;
}

/** MCP tool names allow letters, digits, `_` and `-` (pure). */
export const toolName = (name: string): string => name.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64) || "assistant";

/** One tool per assistant (that `auth` may search): its name (unique, the id appended on clashes), description and input schema. */
export async function assistantTools(
  ctx: ServerContext,
  assistants: AssistantService,
  auth?: RequestAuth,
): Promise<AssistantTool[]> {
  const { items } = await assistants.search(
    { limit: MAX_TOOLS, offset: 0, sort_by: "created_at", sort_order: "asc" },
    auth,
  );
  const taken = new Set<string>();
  const tools: AssistantTool[] = [];
  for (const assistant of items) {
    if (!ctx.graphs.has(assistant.graph_id)) continue;
    let name = toolName(assistant.name);
    if (taken.has(name)) name = toolName(`${name.slice(0, 27)}_${assistant.assistant_id}`);
    taken.add(name);
    // Listing must answer at once: reading a project's TypeScript types takes seconds of CPU.
    const schema = (await ctx.graphs.schemasWithoutWaiting(assistant.graph_id)).input_schema;
    tools.push({
      name,
      description:
        assistant.description ?? ctx.graphs.description(assistant.graph_id) ?? `Runs the ${assistant.graph_id} graph`,
      inputSchema: { ...(schema ?? {}), type: "object" },
      assistant,
    });
  }
  return tools;
}

/** Starts a stateless run (its thread deleted after) and waits for its outcome. */
export async function runAndWait(
  runs: RunService,
  assistantId: string,
  input: unknown,
  signal: AbortSignal,
  auth?: RequestAuth,
): Promise<RunOutcome | undefined> {
  const run = await runs.create(undefined, { assistant_id: assistantId, input }, {}, { auth });
  return runs.outcome(run, signal, 5000);
}
