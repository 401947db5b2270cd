import { notFound } from "@agentplane/common";
import type { ServerContext } from "../context.ts";
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
    return this.#ctx.storage.assistants.get(resolveAssistantId(this.#ctx, idOrGraphId));
  }

  async get(idOrGraphId: string): Promise<Assistant> {
    const assistant = await this.#ctx.storage.assistants.get(assistantIdFromPath(this.#ctx, idOrGraphId));
    if (!assistant) throw assistantNotFound();
    return assistant;
  }

  /** 404 for an unknown graph; 409 when the id exists, unless `if_exists: do_nothing`. */
  async create(input: AssistantCreate): Promise<Assistant> {
    this.#requireGraph(input.graph_id);
    return this.#ctx.storage.assistants.create(input);
  }

  search(query: AssistantSearch): Promise<Page<Assistant>> {
    return this.#ctx.storage.assistants.search(query);
  }

  count(filter: AssistantFilter): Promise<number> {
    return this.#ctx.storage.assistants.count(filter);
  }

  /** Writes the next version and makes it current. */
  async patch(idOrGraphId: string, patch: AssistantPatch): Promise<Assistant> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    if (patch.graph_id !== undefined) this.#requireGraph(patch.graph_id);
    const updated = await this.#ctx.storage.assistants.patch(assistantId, patch);
    if (!updated) throw assistantNotFound();
    return updated;
  }

  /** Deletes the assistant, with `deleteThreads` the threads its runs used too; its id. */
  async delete(idOrGraphId: string, { deleteThreads }: { deleteThreads: boolean }): Promise<string> {
    const assistantId = assistantIdFromPath(this.#ctx, idOrGraphId);
    if (!(await this.#ctx.storage.assistants.delete(assistantId))) throw assistantNotFound();
    if (deleteThreads) await this.#threads().deleteWhere({ assistant_id: assistantId });
    return assistantId;
  }

  /** Newest first. */
  async versions(
    idOrGraphId: string,
    query: { metadata?: JsonObject; limit: number; offset: number },
  ): Promise<AssistantVersion[]> {
    const { assistant_id } = await this.get(idOrGraphId);
    return this.#ctx.storage.assistants.versions(assistant_id, query);
  }

  /** Makes an existing version current; 404 when the version is unknown. */
  async setLatest(idOrGraphId: string, version: number): Promise<Assistant> {
    const { assistant_id } = await this.get(idOrGraphId);
    const updated = await this.#ctx.storage.assistants.setLatest(assistant_id, version);
    if (!updated) throw notFound("Assistant version not found");
    return updated;
  }

  /** The assistant and its graph, built with the assistant's configuration; 404 when the graph is gone. */
  async graph(idOrGraphId: string): Promise<{ assistant: Assistant; graph: AnyCompiledGraph }> {
    const assistant = await this.get(idOrGraphId);
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
