import { z } from "zod";
import { defaultAssistantId } from "../assistants/resolve.ts";
import type { ServerContext } from "../context.ts";
import type { JsonObject } from "../storage/types.ts";
import { ProjectError } from "./project.ts";

/** `{ "<graph id>": { "context": {...}, ...config } }`, as the reference server reads it. */
const GraphConfigs = z.record(
  z.string(),
  z.object({ context: z.record(z.string(), z.unknown()).optional() }).catchall(z.unknown()),
);

/**
 * Config and context of each graph's default assistant from `LANGGRAPH_CONFIG` (the process
 * environment, where `langgraph.json` `env` has been applied). Unset: none. Not a JSON object of
 * objects: a ProjectError, so the server refuses to start.
 */
export function readLanggraphConfig(env: NodeJS.ProcessEnv = process.env): z.infer<typeof GraphConfigs> {
  const raw = env.LANGGRAPH_CONFIG;
  if (raw === undefined || raw.trim() === "") return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    throw new ProjectError(`LANGGRAPH_CONFIG is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = GraphConfigs.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? ` at ${issue.path.join(".")}` : "";
    throw new ProjectError(
      `LANGGRAPH_CONFIG must map graph ids to objects ({"<graph>": {"configurable": {...}, "context": {...}}})${where}: ${issue?.message ?? "invalid"}`,
    );
  }
  return parsed.data;
}

/**
 * One system assistant per graph, with a stable uuid5 id, so clients can use a graph id
 * wherever an assistant id is expected; its config and context come from `LANGGRAPH_CONFIG`.
 * Existing ones are left as they are.
 */
export async function registerDefaultAssistants(ctx: ServerContext): Promise<void> {
  const configs = readLanggraphConfig();
  for (const graphId of ctx.graphs.ids()) {
    const { context, ...config } = configs[graphId] ?? {};
    await ctx.storage.assistants.create({
      assistant_id: defaultAssistantId(graphId),
      graph_id: graphId,
      name: graphId,
      description: ctx.graphs.description(graphId) ?? null,
      metadata: { created_by: "system" },
      config: config as JsonObject,
      ...(context && { context: context as JsonObject }),
      if_exists: "do_nothing",
    });
  }
}
