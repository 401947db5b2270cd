import { v7 as uuidv7 } from "uuid";
import { matchesAuthFilter } from "../custom-auth/authorize.ts";
import { mergeMetadata } from "../schemas/common.ts";
import { jsonContains } from "../storage/json-match.ts";
import type {
  Assistant,
  AssistantCreate,
  AssistantFilter,
  AssistantPatch,
  AssistantSearch,
  AssistantVersion,
  AssistantVersionQuery,
} from "../storage/types.ts";

/** Pure rules shared by every AssistantStore backend, so memory and Redis answer alike. */

export function newAssistant(input: AssistantCreate, now: string): Assistant {
  return {
    assistant_id: input.assistant_id ?? uuidv7(),
    graph_id: input.graph_id,
    config: input.config ?? {},
    context: input.context ?? {},
    metadata: input.metadata ?? {},
    version: 1,
    name: input.name ?? "Untitled",
    description: input.description ?? null,
    created_at: now,
    updated_at: now,
  };
}

/** The next current record: config/context replaced, metadata merged, as version `version`. */
export function applyAssistantPatch(
  current: Assistant,
  patch: AssistantPatch,
  version: number,
  now: string,
): Assistant {
  return {
    ...current,
    graph_id: patch.graph_id ?? current.graph_id,
    config: patch.config ?? current.config,
    context: patch.context ?? current.context,
    metadata: patch.metadata ? mergeMetadata(current.metadata, patch.metadata) : current.metadata,
    name: patch.name ?? current.name,
    description: patch.description !== undefined ? patch.description : current.description,
    version,
    updated_at: now,
  };
}

/** The version record written alongside a current record. */
export function versionOf(assistant: Assistant, now: string): AssistantVersion {
  const { updated_at: _updated, ...fields } = assistant;
  return { ...fields, created_at: now };
}

/** Makes an older version current again, keeping the assistant's creation time. */
export function restoreVersion(current: Assistant, version: AssistantVersion, now: string): Assistant {
  return { ...version, created_at: current.created_at, updated_at: now };
}

export function matchesAssistant(assistant: Assistant, filter: AssistantFilter): boolean {
  if (filter.graph_id !== undefined && assistant.graph_id !== filter.graph_id) return false;
  if (filter.name !== undefined && !assistant.name.toLowerCase().includes(filter.name.toLowerCase())) return false;
  if (filter.metadata && !jsonContains(assistant.metadata, filter.metadata)) return false;
  if (filter.auth && !matchesAuthFilter(assistant.metadata, filter.auth)) return false;
  return true;
}

export function compareAssistants(sortBy: AssistantSearch["sort_by"], order: AssistantSearch["sort_order"]) {
  const direction = order === "asc" ? 1 : -1;
  const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return (a: Assistant, b: Assistant): number =>
    (compare(a[sortBy], b[sortBy]) || compare(a.assistant_id, b.assistant_id)) * direction;
}

export function versionsMatching(versions: AssistantVersion[], query: AssistantVersionQuery): AssistantVersion[] {
  return versions
    .filter((version) => !query.metadata || jsonContains(version.metadata, query.metadata))
    .filter((version) => matchesAuthFilter(version.metadata, query.auth))
    .sort((a, b) => b.version - a.version)
    .slice(query.offset, query.offset + query.limit);
}
