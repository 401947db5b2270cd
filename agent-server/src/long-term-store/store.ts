import {
  BaseStore,
  type GetOperation,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type PutOperation,
  type SearchItem,
  type SearchOperation,
  validateNamespace,
} from "@langchain/langgraph-checkpoint";
import { MINUTE_MS } from "../schemas/common.ts";
import { bestCosine, embedQuery, embedValue, type StoreIndexConfig } from "./semantic.ts";

/** Store-wide TTL settings (langgraph.json `store.ttl`); all durations in minutes. */
export interface StoreTtlConfig {
  /** Applied to puts that pass no `ttl`; unset = items never expire. */
  defaultTtl?: number;
  /** Whether reads extend an item's life when the read does not say (default true). */
  refreshOnRead?: boolean;
  /** How often `start()` sweeps expired items out of the indexes (default 5). */
  sweepIntervalMinutes?: number;
}

export interface LongTermStoreOptions {
  ttl?: StoreTtlConfig;
  /** Semantic search; without it `query` is ignored. */
  index?: StoreIndexConfig;
}

/** `ttl` in minutes; null = never expires; absent = the store's default TTL. */
export type TtlPutOperation = PutOperation & { ttl?: number | null };
export type RefreshingGetOperation = GetOperation & { refreshTtl?: boolean };
export type RefreshingSearchOperation = SearchOperation & { refreshTtl?: boolean };

export interface SearchRequest {
  namespacePrefix: string[];
  filter?: Record<string, unknown>;
  limit: number;
  offset: number;
  refreshTtl: boolean;
}

const isPut = (op: Operation): op is TtlPutOperation => "value" in op;
const isGet = (op: Operation): op is RefreshingGetOperation => "key" in op && !("value" in op);
const isSearch = (op: Operation): op is RefreshingSearchOperation => "namespacePrefix" in op;

/**
 * LangGraph `BaseStore` with per-item TTL (minutes) and refresh-on-read, the parts the memory
 * and Redis backends share: operation dispatch, validation, TTL defaults, the sweeper and
 * semantic search. Without an index `query` is ignored: results are the same as without it.
 */
export abstract class LongTermStore extends BaseStore {
  readonly ttlConfig: StoreTtlConfig;
  readonly index: StoreIndexConfig | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(options: LongTermStoreOptions = {}) {
    super();
    this.ttlConfig = options.ttl ?? {};
    this.index = options.index;
  }

  protected abstract getItem(namespace: string[], key: string, refreshTtl: boolean): Promise<Item | null>;
  /** `vectors`: the item's embeddings, `texts × dims` numbers; null when it is not indexed. */
  protected abstract putItem(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    ttl: number | null,
    vectors: Float32Array | null,
  ): Promise<void>;
  /** The stored embeddings of each item (null where none), in order. */
  protected abstract vectorsOf(items: readonly Item[]): Promise<(Float32Array | null)[]>;
  protected abstract deleteItem(namespace: string[], key: string): Promise<void>;
  protected abstract searchItems(request: SearchRequest): Promise<SearchItem[]>;
  protected abstract listNamespacesOf(operation: ListNamespacesOperation): Promise<string[][]>;
  /** Removes every expired item and its index entries; returns how many went. */
  abstract sweepExpired(): Promise<number>;

  /** Operations run in order, so a get after a put in the same batch sees the put. */
  async batch<Op extends readonly Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const op of operations) results.push(await this.run(op));
    return results as OperationResults<Op>;
  }

  override get(namespace: string[], key: string, options: { refreshTtl?: boolean } = {}): Promise<Item | null> {
    return this.run({ namespace, key, ...options } as RefreshingGetOperation) as Promise<Item | null>;
  }

  override async put(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    index?: false | string[],
    options: { ttl?: number | null } = {},
  ): Promise<void> {
    validateNamespace(namespace);
    await this.run({ namespace, key, value, index, ...options } as TtlPutOperation);
  }

  override search(
    namespacePrefix: string[],
    options: {
      filter?: Record<string, unknown>;
      limit?: number;
      offset?: number;
      query?: string;
      refreshTtl?: boolean;
    } = {},
  ): Promise<SearchItem[]> {
    return this.run({ namespacePrefix, ...options } as RefreshingSearchOperation) as Promise<SearchItem[]>;
  }

  override start(): void {
    if (this.sweeper) return;
    const minutes = this.ttlConfig.sweepIntervalMinutes ?? 5;
    this.sweeper = setInterval(() => void this.sweepExpired().catch(() => undefined), minutes * MINUTE_MS);
    this.sweeper.unref();
  }

  override stop(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  private async run(op: Operation): Promise<unknown> {
    if (isPut(op)) {
      validateNamespace(op.namespace, { allowReservedRoot: true });
      if (op.value === null) return this.deleteItem(op.namespace, op.key);
      const ttl = this.resolveTtl(op.ttl);
      const vectors =
        this.index && op.index !== false ? await embedValue(this.index, op.value, op.index ?? this.index.fields) : null;
      return this.putItem(op.namespace, op.key, op.value, ttl, vectors);
    }
    if (isGet(op)) {
      validateNamespace(op.namespace, { allowReservedRoot: true });
      return this.getItem(op.namespace, op.key, op.refreshTtl ?? this.ttlConfig.refreshOnRead ?? true);
    }
    if (isSearch(op)) {
      validateNamespace(op.namespacePrefix, { allowEmpty: true, allowReservedRoot: true });
      const request: SearchRequest = {
        namespacePrefix: op.namespacePrefix,
        filter: op.filter,
        limit: op.limit ?? 10,
        offset: op.offset ?? 0,
        refreshTtl: op.refreshTtl ?? this.ttlConfig.refreshOnRead ?? true,
      };
      return op.query && this.index ? this.semanticSearch(request, op.query, this.index) : this.searchItems(request);
    }
    return this.listNamespacesOf(op as ListNamespacesOperation);
  }

  /**
   * Every item the prefix and filter select, ranked by similarity to `query`; items stored
   * without vectors (`index: false`, no text at the paths) follow, newest first, without a score.
   */
  private async semanticSearch(request: SearchRequest, query: string, index: StoreIndexConfig) {
    const [queryVector, candidates] = await Promise.all([
      embedQuery(index, query),
      this.searchItems({ ...request, offset: 0, limit: Number.MAX_SAFE_INTEGER, refreshTtl: false }),
    ]);
    const vectors = await this.vectorsOf(candidates);
    const scored: SearchItem[] = candidates.map((item, i) => {
      const score = bestCosine(queryVector, vectors[i] ?? null, index.dims);
      return score === undefined ? item : { ...item, score };
    });
    const rank = (item: SearchItem) => item.score ?? -Infinity;
    scored.sort((a, b) => (rank(a) === rank(b) ? 0 : rank(b) - rank(a)));
    const page = scored.slice(request.offset, request.offset + request.limit);
    if (request.refreshTtl) await Promise.all(page.map((item) => this.getItem(item.namespace, item.key, true)));
    return page;
  }

  private resolveTtl(ttl: number | null | undefined): number | null {
    const minutes = ttl === undefined ? this.ttlConfig.defaultTtl : ttl;
    if (minutes === undefined || minutes === null) return null;
    if (!(minutes > 0)) throw new RangeError(`ttl must be a positive number of minutes, got ${minutes}`);
    return minutes;
  }
}
