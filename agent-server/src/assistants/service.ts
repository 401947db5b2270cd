import { conflict, notFound } from "@agentplane/common";
import type { ServerContext } from "../context.ts";
import { type AuthEvent, authorize, matchesAuthFilter, type RequestAuth } from "../custom-auth/authorize.ts";
import type { AnyCompiledGraph } from "../graphs/types.ts";
import type {
  Assistant,
  AssistantCreate,
  AssistantFilter,
  AssistantPatch,
  AssistantSearch,
  AssistantVersion,
  JsonObject,
  Page,
} from "../storage/types.ts";
import type { ThreadService } from "../threads/service.ts";
import { loadAssistant } from "./load.ts";
import { assistantIdFromPath, resolveAssistantId } from "./resolve.ts";

const assistantNotFound = () => notFound("Assistant not found");

/**
 * Assistants and their versions. Lookups by path take an assistant id or a graph id (its default
 * assistant): 422 for anything else, 404 when there is no such assistant.
 */
export class AssistantService {
  readonly #ctx: ServerContext;
  readonly #threads: () => ThreadService;

  /** `threads` deletes an assistant's threads (`delete_threads`). */
  constructor(ctx: ServerContext, threads: () => ThreadService) {
    this.#ctx = ctx;
    this.#threads = threads;
  }

  #requireGraph(graphId: string): void {
    if (!this.#ctx.graphs.has(graphId)) throw notFound(`Graph "${graphId}" not found`);
  }

  /** The assistant by id or graph id, or undefined when unknown (no 422 for malformed ids). */
  find(idOrGraphId: string): Promise<Assistant | undefined> {
    return loadAssistant(this.#ctx, resolveAssistantId(this.#ctx, idOrGraphId));
  }

  /** 404 when unknown, or when `auth`'s handler for `event` filters it out. */
  async get(
    idOrGraphId: string,
    auth?: RequestAuth,
    event: AuthEvent = "assistants:read",
    value?: object,
  ): Promise<Assistant> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    const filter = await authorize(auth, event, value ?? { assistant_id: assistantId });
    const assistant = await loadAssistant(this.#ctx, assistantId);
    if (!assistant || !matchesAuthFilter(assistant.metadata, filter)) throw assistantNotFound();
    return assistant;
  }

  /** 404 for an unknown graph; 409 when the id exists, unless `if_exists: do_nothing`. */
  async create(input: AssistantCreate, auth?: RequestAuth): Promise<Assistant> {
    this.#requireGraph(input.graph_id);
    if (!auth) return this.#ctx.storage.assistants.create(input);
    // The handler may stamp the metadata (an owner): the assistant is created with what it leaves.
    const value = { ...input, metadata: { ...input.metadata } };
    const filter = await authorize(auth, "assistants:create", value);
    if (input.assistant_id && filter) {
      const existing = await this.#ctx.storage.assistants.get(input.assistant_id);
      // Someone else's assistant of that id is a conflict, never returned.
      if (existing && !matchesAuthFilter(existing.metadata, filter)) throw conflict("Assistant already exists");
    }
    return this.#ctx.storage.assistants.create({ ...input, metadata: value.metadata });
  }

  async search(query: AssistantSearch, auth?: RequestAuth): Promise<Page<Assistant>> {
    const { graph_id, metadata, limit, offset } = query;
    const filter = await authorize(auth, "assistants:search", { graph_id, metadata, limit, offset });
    return this.#ctx.storage.assistants.search(filter ? { ...query, auth: filter } : query);
  }

  async count(query: AssistantFilter, auth?: RequestAuth): Promise<number> {
    const { graph_id, metadata } = query;
    const filter = await authorize(auth, "assistants:search", { graph_id, metadata, limit: 0, offset: 0 });
    return this.#ctx.storage.assistants.count(filter ? { ...query, auth: filter } : query);
  }

  /** Writes the next version and makes it current (with the metadata `auth`'s handler leaves). */
  async patch(idOrGraphId: string, patch: AssistantPatch, auth?: RequestAuth): Promise<Assistant> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    const value = { assistant_id: assistantId, ...patch };
    if (auth) await this.get(assistantId, auth, "assistants:update", value);
    if (patch.graph_id !== undefined) this.#requireGraph(patch.graph_id);
    const updated = await this.#ctx.storage.assistants.patch(assistantId, { ...patch, metadata: value.metadata });
    if (!updated) throw assistantNotFound();
    return updated;
  }

  /** Deletes the assistant, with `deleteThreads` the threads its runs used too (those `auth` may delete); its id. */
  async delete(
    idOrGraphId: string,
    { deleteThreads }: { deleteThreads: boolean },
    auth?: RequestAuth,
  ): Promise<string> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    if (auth) await this.get(assistantId, auth, "assistants:delete");
    if (!(await this.#ctx.storage.assistants.delete(assistantId))) throw assistantNotFound();
    if (deleteThreads) await this.#threads().deleteWhere({ assistant_id: assistantId }, auth);
    return assistantId;
  }

  /**
   * Newest first. With `auth`, as on the reference: its `assistants:read` handler filters each
   * version by that version's metadata, and a page the filter leaves empty is a 404.
   */
  async versions(
    idOrGraphId: string,
    query: { metadata?: JsonObject; limit: number; offset: number },
    auth?: RequestAuth,
  ): Promise<AssistantVersion[]> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    const filter = await authorize(auth, "assistants:read", { assistant_id: assistantId });
    if (!(await loadAssistant(this.#ctx, assistantId))) throw assistantNotFound();
    const versions = await this.#ctx.storage.assistants.versions(assistantId, { ...query, auth: filter });
    if (filter && versions.length === 0) throw assistantNotFound();
    return versions;
  }

  /** Makes an existing version current; 404 when the version is unknown. */
  async setLatest(idOrGraphId: string, version: number, auth?: RequestAuth): Promise<Assistant> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    const { assistant_id } = await this.get(assistantId, auth, "assistants:update", {
      assistant_id: assistantId,
      version,
    });
    const updated = await this.#ctx.storage.assistants.setLatest(assistant_id, version);
    if (!updated) throw notFound("Assistant version not found");
    return updated;
  }

  /** The assistant and its graph, built with the assistant's configuration; 404 when the graph is gone. */
  async graph(idOrGraphId: string, auth?: RequestAuth): Promise<{ assistant: Assistant; graph: AnyCompiledGraph }> {
    const assistant = await this.get(idOrGraphId, auth);
    this.#requireGraph(assistant.graph_id);
    const graph = await this.#ctx.graphs.get(assistant.graph_id, {
      configurable: {
        ...(assistant.config.configurable as Record<string, unknown>),
        assistant_id: assistant.assistant_id,
      },
    });
    return { assistant, graph };
  }
}
