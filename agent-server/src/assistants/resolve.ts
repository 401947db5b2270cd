import { unprocessable } from "@agentplane/common";
import { validate as isUuid, v5 as uuidv5 } from "uuid";
import type { ServerContext } from "../context.ts";

/** The namespace LangGraph servers derive default assistant ids from. */
const GRAPH_NAMESPACE = "6ba7b821-9dad-11d1-80b4-00c04fd430c8";

/** Graph ids are few and every run names one: each is hashed once. */
const defaultIds = new Map<string, string>();

/** The stable id of a graph's default assistant, e.g. `agent` → `fe096781-5601-53d2-b2f6-0d3403f7e9ca`. */
export function defaultAssistantId(graphId: string): string {
  let id = defaultIds.get(graphId);
  if (id === undefined) {
    id = uuidv5(graphId, GRAPH_NAMESPACE);
    defaultIds.set(graphId, id);
  }
  return id;
}

/** A registered graph id stands for its default assistant; anything else passes through. */
export function resolveAssistantId(ctx: ServerContext, idOrGraphId: string): string {
  return ctx.graphs.has(idOrGraphId) ? defaultAssistantId(idOrGraphId) : idOrGraphId;
}

/** Like `resolveAssistantId`, answering 422 for a value that is neither a uuid nor a graph id. */
export function assistantIdFromPath(ctx: ServerContext, idOrGraphId: string): string {
  const id = resolveAssistantId(ctx, idOrGraphId);
  if (!isUuid(id)) {
    throw unprocessable([
      { loc: ["path", "assistant_id"], msg: "Input should be a valid UUID or graph ID", type: "uuid_parsing" },
    ]);
  }
  return id;
}
