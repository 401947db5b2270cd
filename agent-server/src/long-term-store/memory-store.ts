import type { Item, ListNamespacesOperation, SearchItem } from "@langchain/langgraph-checkpoint";
import { MINUTE_MS } from "../schemas/common.ts";
import { isWithinPrefix, matchesFilter, selectNamespaces } from "./query.ts";
import { LongTermStore, type LongTermStoreOptions, type SearchRequest } from "./store.ts";

interface StoredItem {
  namespace: string[];
  key: string;
  value: Record<string, unknown>;
  createdAt: number;
  /** Microseconds, strictly increasing across the store, so "newest first" never ties. */
  updatedUs: number;
  expiresAt: number | null;
  ttl: number | null;
  vectors: Float32Array | null;
}

/** The embedded long-term store: same behaviour as RedisStore, held in process memory. */
export class MemoryStore extends LongTermStore {
  private readonly namespaces = new Map<string, Map<string, StoredItem>>();
  private lastUpdateUs = 0;

  constructor(options: LongTermStoreOptions = {}) {
    super(options);
  }

  protected async getItem(namespace: string[], key: string, refreshTtl: boolean): Promise<Item | null> {
    const stored = this.live(namespace.join("."), key);
    if (!stored) return null;
    if (refreshTtl) this.refresh(stored);
    return toItem(stored);
  }

  protected async putItem(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    ttl: number | null,
    vectors: Float32Array | null,
  ) {
    const nsKey = namespace.join(".");
    const now = Date.now();
    const previous = this.live(nsKey, key);
    this.lastUpdateUs = Math.max(now * 1000, this.lastUpdateUs + 1);
    const items = this.namespaces.get(nsKey) ?? new Map<string, StoredItem>();
    this.namespaces.set(nsKey, items);
    items.set(key, {
      namespace: [...namespace],
      key,
      value: structuredClone(value),
      createdAt: previous?.createdAt ?? now,
      updatedUs: this.lastUpdateUs,
      expiresAt: ttl === null ? null : now + ttl * MINUTE_MS,
      ttl,
      vectors,
    });
  }

  protected async vectorsOf(items: readonly Item[]): Promise<(Float32Array | null)[]> {
    return items.map((item) => this.namespaces.get(item.namespace.join("."))?.get(item.key)?.vectors ?? null);
  }

  protected async deleteItem(namespace: string[], key: string): Promise<void> {
    this.remove(namespace.join("."), key);
  }

  protected async searchItems(request: SearchRequest): Promise<SearchItem[]> {
    const matches: StoredItem[] = [];
    for (const [nsKey, items] of this.namespaces) {
      for (const key of [...items.keys()]) {
        const stored = this.live(nsKey, key);
        if (
          stored &&
          isWithinPrefix(stored.namespace, request.namespacePrefix) &&
          matchesFilter(stored.value, request.filter)
        ) {
          matches.push(stored);
        }
      }
    }
    matches.sort((a, b) => b.updatedUs - a.updatedUs);
    const offset = Math.max(0, request.offset);
    const page = matches.slice(offset, offset + Math.max(0, request.limit));
    if (request.refreshTtl) for (const stored of page) this.refresh(stored);
    return page.map(toItem);
  }

  protected async listNamespacesOf(operation: ListNamespacesOperation): Promise<string[][]> {
    await this.sweepExpired();
    const namespaces = [...this.namespaces.values()].flatMap((items) => {
      const first = items.values().next().value;
      return first ? [first.namespace] : [];
    });
    return selectNamespaces(namespaces, operation);
  }

  async sweepExpired(): Promise<number> {
    let removed = 0;
    for (const [nsKey, items] of this.namespaces) {
      for (const key of [...items.keys()]) if (!this.live(nsKey, key)) removed += 1;
    }
    return removed;
  }

  /** The item if it exists and has not expired; expired items are removed on sight. */
  private live(nsKey: string, key: string): StoredItem | undefined {
    const stored = this.namespaces.get(nsKey)?.get(key);
    if (stored?.expiresAt != null && stored.expiresAt <= Date.now()) {
      this.remove(nsKey, key);
      return undefined;
    }
    return stored;
  }

  private refresh(stored: StoredItem): void {
    if (stored.ttl !== null) stored.expiresAt = Date.now() + stored.ttl * MINUTE_MS;
  }

  private remove(nsKey: string, key: string): void {
    const items = this.namespaces.get(nsKey);
    items?.delete(key);
    if (items?.size === 0) this.namespaces.delete(nsKey);
  }
}

function toItem(stored: StoredItem): Item {
  return {
    namespace: [...stored.namespace],
    key: stored.key,
    value: structuredClone(stored.value),
    createdAt: new Date(stored.createdAt),
    updatedAt: new Date(Math.floor(stored.updatedUs / 1000)),
  };
}
