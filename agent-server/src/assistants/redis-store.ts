import { conflict } from "@agentplane/common";
import type { RedisClient } from "../storage/redis-client.ts";
import { RedisScript } from "../storage/redis-script.ts";
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

/**
 * Compare-and-set of the current record, guarded by the version count so two patches can
 * never both claim version max+1. KEYS: current, versions hash, id index. ARGV: expected
 * current JSON ('' = absent), expected version count, new current JSON, new version number
 * ('' = none), its JSON, index score, assistant id.
 */
const WRITE_SCRIPT = new RedisScript(`
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] or redis.call('HLEN', KEYS[2]) ~= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], ARGV[4], ARGV[5]) end
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[7])
return 1
`);
const MAX_CAS_ATTEMPTS = 50;

/**
 * `assistant:<id>` holds the current record as JSON, `assistant:<id>:versions` every version
 * (field = version number, so the version count is the highest version), `assistants` the ids
 * by creation time. Assistants are few, so search filters and sorts them in the process.
 */
export class RedisAssistantStore implements AssistantStore {
  private readonly client: RedisClient;
  private readonly prefix: string;

  constructor(client: RedisClient, prefix: string) {
    this.client = client;
    this.prefix = prefix;
  }

  async create(input: AssistantCreate): Promise<Assistant> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const now = new Date().toISOString();
      const assistant = newAssistant(input, now);
      if (await this.write(assistant, "", 0, versionOf(assistant, now))) return assistant;
      if (input.if_exists !== "do_nothing") throw conflict("Assistant already exists");
      const existing = await this.get(assistant.assistant_id);
      if (existing) return existing;
    }
    throw new Error("assistant create kept racing with deletes");
  }

  async get(assistantId: string): Promise<Assistant | undefined> {
    const raw = await this.client.get(this.currentKey(assistantId));
    return raw === null ? undefined : (JSON.parse(raw) as Assistant);
  }

  async patch(assistantId: string, patch: AssistantPatch): Promise<Assistant | undefined> {
    return this.replaceCurrent(assistantId, (current, count, now) => {
      const next = applyAssistantPatch(current, patch, count + 1, now);
      return { next, version: versionOf(next, now) };
    });
  }

  async setLatest(assistantId: string, version: number): Promise<Assistant | undefined> {
    const raw = await this.client.hGet(this.versionsKey(assistantId), String(version));
    if (raw === null) return undefined;
    const target = JSON.parse(raw) as AssistantVersion;
    return this.replaceCurrent(assistantId, (current, _count, now) => ({ next: restoreVersion(current, target, now) }));
  }

  async delete(assistantId: string): Promise<boolean> {
    const [deleted] = await this.client
      .multi()
      .del(this.currentKey(assistantId))
      .del(this.versionsKey(assistantId))
      .zRem(this.indexKey(), assistantId)
      .exec();
    return Number(deleted) > 0;
  }

  async search(query: AssistantSearch): Promise<Page<Assistant>> {
    const matching = (await this.matching(query)).sort(compareAssistants(query.sort_by, query.sort_order));
    return { items: matching.slice(query.offset, query.offset + query.limit), total: matching.length };
  }

  async count(filter: AssistantFilter): Promise<number> {
    return (await this.matching(filter)).length;
  }

  async versions(assistantId: string, query: AssistantVersionQuery): Promise<AssistantVersion[]> {
    const raws = await this.client.hVals(this.versionsKey(assistantId));
    return versionsMatching(
      raws.map((raw) => JSON.parse(raw) as AssistantVersion),
      query,
    );
  }

  private async replaceCurrent(
    assistantId: string,
    change: (current: Assistant, versionCount: number, now: string) => { next: Assistant; version?: AssistantVersion },
  ): Promise<Assistant | undefined> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const [raw, count] = await Promise.all([
        this.client.get(this.currentKey(assistantId)),
        this.client.hLen(this.versionsKey(assistantId)),
      ]);
      if (raw === null) return undefined;
      const { next, version } = change(JSON.parse(raw) as Assistant, count, new Date().toISOString());
      if (await this.write(next, raw, count, version)) return next;
    }
    throw new Error(`assistant ${assistantId} is updated too concurrently`);
  }

  private async write(next: Assistant, oldJson: string, versionCount: number, version?: AssistantVersion) {
    const result = await WRITE_SCRIPT.run(
      this.client,
      [this.currentKey(next.assistant_id), this.versionsKey(next.assistant_id), this.indexKey()],
      [
        oldJson,
        String(versionCount),
        JSON.stringify(next),
        version ? String(version.version) : "",
        version ? JSON.stringify(version) : "",
        String(Date.parse(next.created_at)),
        next.assistant_id,
      ],
    );
    return result === 1;
  }

  private async matching(filter: AssistantFilter): Promise<Assistant[]> {
    const ids = await this.client.zRange(this.indexKey(), 0, -1);
    if (ids.length === 0) return [];
    const raws = await this.client.mGet(ids.map((id) => this.currentKey(id)));
    return raws
      .filter((raw): raw is string => raw !== null)
      .map((raw) => JSON.parse(raw) as Assistant)
      .filter((assistant) => matchesAssistant(assistant, filter));
  }

  private currentKey(assistantId: string): string {
    return `${this.prefix}assistant:${assistantId}`;
  }

  private versionsKey(assistantId: string): string {
    return `${this.prefix}assistant:${assistantId}:versions`;
  }

  private indexKey(): string {
    return `${this.prefix}assistants`;
  }
}
