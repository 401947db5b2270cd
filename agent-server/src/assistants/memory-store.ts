import { conflict } from "@agentplane/common";
import type {
  Assistant,
  AssistantCreate,
  AssistantFilter,
  AssistantPatch,
  AssistantSearch,
  AssistantStore,
  AssistantVersion,
  AssistantVersionQuery,
  Page,
} from "../storage/types.ts";
import {
  applyAssistantPatch,
  compareAssistants,
  matchesAssistant,
  newAssistant,
  restoreVersion,
  versionOf,
  versionsMatching,
} from "./records.ts";

interface Entry {
  current: Assistant;
  versions: AssistantVersion[];
}

/** Assistants and their versions in a Map, for `agent-server dev` and tests. */
export class MemoryAssistantStore implements AssistantStore {
  private readonly entries = new Map<string, Entry>();

  async create(input: AssistantCreate): Promise<Assistant> {
    const existing = input.assistant_id ? this.entries.get(input.assistant_id) : undefined;
    if (existing) {
      if (input.if_exists === "do_nothing") return structuredClone(existing.current);
      throw conflict("Assistant already exists");
    }
    const now = new Date().toISOString();
    const assistant = newAssistant(structuredClone(input), now);
    this.entries.set(assistant.assistant_id, { current: assistant, versions: [versionOf(assistant, now)] });
    return structuredClone(assistant);
  }

  async get(assistantId: string): Promise<Assistant | undefined> {
    const entry = this.entries.get(assistantId);
    return entry && structuredClone(entry.current);
  }

  async patch(assistantId: string, patch: AssistantPatch): Promise<Assistant | undefined> {
    const entry = this.entries.get(assistantId);
    if (!entry) return undefined;
    const now = new Date().toISOString();
    entry.current = applyAssistantPatch(entry.current, structuredClone(patch), entry.versions.length + 1, now);
    entry.versions.push(versionOf(entry.current, now));
    return structuredClone(entry.current);
  }

  async delete(assistantId: string): Promise<boolean> {
    return this.entries.delete(assistantId);
  }

  async search(query: AssistantSearch): Promise<Page<Assistant>> {
    const matching = this.matching(query).sort(compareAssistants(query.sort_by, query.sort_order));
    return { items: structuredClone(matching.slice(query.offset, query.offset + query.limit)), total: matching.length };
  }

  async count(filter: AssistantFilter): Promise<number> {
    return this.matching(filter).length;
  }

  async versions(assistantId: string, query: AssistantVersionQuery): Promise<AssistantVersion[]> {
    return structuredClone(versionsMatching(this.entries.get(assistantId)?.versions ?? [], query));
  }

  async setLatest(assistantId: string, version: number): Promise<Assistant | undefined> {
    const entry = this.entries.get(assistantId);
    const target = entry?.versions.find((v) => v.version === version);
    if (!entry || !target) return undefined;
    entry.current = restoreVersion(entry.current, target, new Date().toISOString());
    return structuredClone(entry.current);
  }

  private matching(filter: AssistantFilter): Assistant[] {
    return [...this.entries.values()].map((e) => e.current).filter((a) => matchesAssistant(a, filter));
  }
}
