import type { Item, ListNamespacesOperation, SearchItem } from "@langchain/langgraph-checkpoint";
import type { RedisClient } from "../storage/redis-client.ts";
import { isWithinPrefix, literalPrefix, matchesFilter, selectNamespaces } from "./query.ts";
import {
  deleteItemScript,
  parseRecord,
  putItemScript,
  refreshItemScript,
  type StoredRecord,
  StoreKeys,
} from "./redis-layout.ts";
import { decodeVectors, encodeVectors } from "./semantic.ts";
import { LongTermStore, type LongTermStoreOptions, type SearchRequest } from "./store.ts";

const SWEEP_BATCH = 500;
const READ_CHUNK = 100;

interface Candidate {
  nsKey: string;
  key: string;
  updatedUs: number;
}

type Found = Candidate & { record: StoredRecord; value: Record<string, unknown> };

const isNewer = (a: Candidate, b: Candidate) =>
  a.updatedUs > b.updatedUs || (a.updatedUs === b.updatedUs && a.nsKey + a.key < b.nsKey + b.key);

/** The keys of one namespace, newest update first, read from its zset a window at a time. */
class UpdateCursor {
  head: Candidate | undefined;
  private readonly buffer: Candidate[] = [];
  private read = 0;
  private exhausted = false;
  private readonly client: RedisClient;
  private readonly key: string;
  private readonly nsKey: string;
  private readonly window: number;

  constructor(client: RedisClient, key: string, nsKey: string, window: number) {
    this.client = client;
    this.key = key;
    this.nsKey = nsKey;
    this.window = window;
  }

  /** Makes `head` the next key, fetching the next window when the current one is used up. */
  async ready(): Promise<void> {
    if (this.head) return;
    if (this.buffer.length === 0 && !this.exhausted) {
      const entries = await this.client.zRangeWithScores(this.key, this.read, this.read + this.window - 1, {
        REV: true,
      });
      this.read += entries.length;
      this.exhausted = entries.length < this.window;
      for (const { value, score } of entries) this.buffer.push({ nsKey: this.nsKey, key: value, updatedUs: score });
    }
    this.head = this.buffer.shift();
  }

  take(): Candidate | undefined {
    const taken = this.head;
    this.head = undefined;
    return taken;
  }
}

/**
 * LangGraph long-term memory (`BaseStore`) on plain Redis 7: items in a hash per namespace,
 * a per-namespace zset by update time, a lexicographic zset of namespaces for prefix scans
 * and an expiry zset for TTLs. Writes are single atomic scripts.
 */
export class RedisStore extends LongTermStore {
  readonly keys: StoreKeys;
  private readonly client: RedisClient;

  constructor(client: RedisClient, options: LongTermStoreOptions & { prefix: string }) {
    super(options);
    this.client = client;
    this.keys = new StoreKeys(options.prefix);
  }

  protected async getItem(namespace: string[], key: string, refreshTtl: boolean): Promise<Item | null> {
    const nsKey = namespace.join(".");
    const raw = await this.client.hGet(this.keys.values(nsKey), key);
    if (raw === null || raw === undefined) return null;
    const record = parseRecord(raw);
    if (this.expired(record)) {
      await this.removeIfExpired(nsKey, key);
      return null;
    }
    if (refreshTtl && record.ttl !== null) await this.refresh(nsKey, key);
    return toItem(namespace, key, record, JSON.parse(record.json));
  }

  protected async putItem(
    namespace: string[],
    key: string,
    value: Record<string, unknown>,
    ttl: number | null,
    vectors: Float32Array | null,
  ) {
    const nsKey = namespace.join(".");
    await putItemScript.run(this.client, this.keys.itemScriptKeys(nsKey), [
      key,
      nsKey,
      ttl === null ? "" : String(ttl),
      JSON.stringify(value),
      vectors ? encodeVectors(vectors) : "",
    ]);
  }

  protected async vectorsOf(items: readonly Item[]): Promise<(Float32Array | null)[]> {
    const texts = await this.readFields(
      (nsKey) => this.keys.vectors(nsKey),
      items.map((item) => ({ nsKey: item.namespace.join("."), key: item.key })),
    );
    return texts.map((text) => (text ? decodeVectors(text) : null));
  }

  protected async deleteItem(namespace: string[], key: string): Promise<void> {
    const nsKey = namespace.join(".");
    await deleteItemScript.run(this.client, this.keys.itemScriptKeys(nsKey), [key, nsKey, ""]);
  }

  protected async searchItems(request: SearchRequest): Promise<SearchItem[]> {
    const offset = Math.max(0, request.offset);
    const wanted = offset + Math.max(0, request.limit);
    if (wanted === offset) return [];
    const namespaces = await this.namespacesUnder(request.namespacePrefix);
    const page = (await this.collect(namespaces, request, wanted)).slice(offset);
    if (request.refreshTtl) {
      await Promise.all(
        page.filter(({ record }) => record.ttl !== null).map(({ nsKey, key }) => this.refresh(nsKey, key)),
      );
    }
    return page.map(({ nsKey, key, record, value }) => toItem(nsKey.split("."), key, record, value));
  }

  protected async listNamespacesOf(operation: ListNamespacesOperation): Promise<string[][]> {
    // A namespace whose last items expired must not be listed: clear what is due first.
    await this.sweepExpired();
    const namespaces = await this.namespacesUnder(literalPrefix(operation.matchConditions));
    return selectNamespaces(
      namespaces.map((nsKey) => nsKey.split(".")),
      operation,
    );
  }

  async sweepExpired(): Promise<number> {
    let removed = 0;
    for (;;) {
      const due = await this.client.zRangeByScore(this.keys.expiries(), "-inf", Date.now(), {
        LIMIT: { offset: 0, count: SWEEP_BATCH },
      });
      const results = await Promise.all(
        due.map((member) => {
          const separator = member.indexOf("\0");
          return this.removeIfExpired(member.slice(0, separator), member.slice(separator + 1));
        }),
      );
      removed += results.filter(Boolean).length;
      if (due.length < SWEEP_BATCH) return removed;
    }
  }

  /** Namespace keys equal to or below `prefix`, by a range scan of the namespace index. */
  private async namespacesUnder(prefix: string[]): Promise<string[]> {
    const literal = prefix.join(".");
    const range =
      literal === "" ? ["-", "+"] : [`[${literal}`, Buffer.concat([Buffer.from(`[${literal}.`), Buffer.from([0xff])])];
    const members = (await this.client.sendCommand(["ZRANGE", this.keys.namespaces(), ...range, "BYLEX"])) as string[];
    return members.filter((nsKey) => isWithinPrefix(nsKey.split("."), prefix));
  }

  /** Live items of `namespaces` matching the filter, newest update first, until `wanted` are found. */
  private async collect(namespaces: string[], request: SearchRequest, wanted: number) {
    const found: Found[] = [];
    // Without a filter every live key read makes the page, so read no more than still wanted.
    const batchSize = () => (request.filter ? READ_CHUNK : wanted - found.length);
    const cursors = namespaces.map(
      (nsKey) => new UpdateCursor(this.client, this.keys.updates(nsKey), nsKey, batchSize()),
    );
    while (found.length < wanted) {
      const batch: Candidate[] = [];
      while (batch.length < batchSize()) {
        await Promise.all(cursors.map((cursor) => cursor.ready()));
        const newest = cursors.reduce<UpdateCursor | undefined>(
          (best, cursor) => (cursor.head && (!best?.head || isNewer(cursor.head, best.head)) ? cursor : best),
          undefined,
        );
        const next = newest?.take();
        if (!next) break;
        batch.push(next);
      }
      if (batch.length === 0) break;
      const raws = await this.readFields((nsKey) => this.keys.values(nsKey), batch);
      batch.forEach((candidate, index) => {
        const raw = raws[index];
        if (raw === null || raw === undefined || found.length >= wanted) return;
        const record = parseRecord(raw);
        if (this.expired(record)) return;
        const value = JSON.parse(record.json) as Record<string, unknown>;
        if (matchesFilter(value, request.filter)) found.push({ ...candidate, record, value });
      });
    }
    return found;
  }

  /** The fields of `candidates` in their namespace's hash (`hashKey`), in order: one HMGET per namespace. */
  private async readFields(
    hashKey: (nsKey: string) => string,
    candidates: readonly Pick<Candidate, "nsKey" | "key">[],
  ): Promise<(string | null)[]> {
    const byNamespace = new Map<string, number[]>();
    candidates.forEach(({ nsKey }, index) => {
      const indexes = byNamespace.get(nsKey);
      if (indexes) indexes.push(index);
      else byNamespace.set(nsKey, [index]);
    });
    const raws: (string | null)[] = new Array(candidates.length).fill(null);
    await Promise.all(
      [...byNamespace].map(async ([nsKey, indexes]) => {
        const fields = indexes.map((index) => (candidates[index] as { key: string }).key);
        const values = await this.client.hmGet(hashKey(nsKey), fields);
        indexes.forEach((index, position) => {
          raws[index] = values[position] ?? null;
        });
      }),
    );
    return raws;
  }

  private expired(record: StoredRecord): boolean {
    return record.expiresAt !== null && record.expiresAt <= Date.now();
  }

  private async refresh(nsKey: string, key: string): Promise<void> {
    await refreshItemScript.run(this.client, [this.keys.values(nsKey), this.keys.expiries()], [key, nsKey]);
  }

  private async removeIfExpired(nsKey: string, key: string): Promise<boolean> {
    const removed = await deleteItemScript.run(this.client, this.keys.itemScriptKeys(nsKey), [key, nsKey, "expired"]);
    return removed === 1;
  }
}

function toItem(namespace: string[], key: string, record: StoredRecord, value: Record<string, unknown>): Item {
  return {
    namespace,
    key,
    value,
    createdAt: new Date(Math.floor(record.createdUs / 1000)),
    updatedAt: new Date(Math.floor(record.updatedUs / 1000)),
  };
}
