import { RedisScript } from "../storage/redis-script.ts";

/**
 * Redis layout of the long-term store. Namespace labels contain neither `.` nor `:` (BaseStore
 * validation), so a namespace is keyed by its labels joined with `.`.
 *
 * | key | type | holds |
 * |---|---|---|
 * | `<p>store:ns` | zset, score 0 | every non-empty namespace (lexicographic: prefix = range scan) |
 * | `<p>store:v:<ns>` | hash | key → record `<created µs>\n<updated µs>\n<expires ms>\n<ttl min>\n<value JSON>` |
 * | `<p>store:u:<ns>` | zset | key scored by updated µs (newest-first search) |
 * | `<p>store:exp` | zset | `<ns>\0<key>` scored by expires ms (sweeper) |
 * | `<p>store:vec:<ns>` | hash | key → the item's embeddings (base64 float32), when `store.index` is set |
 *
 * Times come from the Redis server clock (TIME), so every client orders updates the same way.
 */
export class StoreKeys {
  readonly base: string;

  constructor(prefix: string) {
    this.base = `${prefix}store:`;
  }

  namespaces(): string {
    return `${this.base}ns`;
  }

  values(nsKey: string): string {
    return `${this.base}v:${nsKey}`;
  }

  updates(nsKey: string): string {
    return `${this.base}u:${nsKey}`;
  }

  expiries(): string {
    return `${this.base}exp`;
  }

  vectors(nsKey: string): string {
    return `${this.base}vec:${nsKey}`;
  }

  /** KEYS of the put/delete scripts, in their order. */
  itemScriptKeys(nsKey: string): string[] {
    return [this.values(nsKey), this.updates(nsKey), this.namespaces(), this.expiries(), this.vectors(nsKey)];
  }
}

export interface StoredRecord {
  createdUs: number;
  updatedUs: number;
  expiresAt: number | null;
  ttl: number | null;
  json: string;
}

export function parseRecord(record: string): StoredRecord {
  const fields: string[] = [];
  let start = 0;
  for (let i = 0; i < 4; i += 1) {
    const end = record.indexOf("\n", start);
    fields.push(record.slice(start, end));
    start = end + 1;
  }
  const [created, updated, expires, ttl] = fields as [string, string, string, string];
  return {
    createdUs: Number(created),
    updatedUs: Number(updated),
    expiresAt: expires === "" ? null : Number(expires),
    ttl: ttl === "" ? null : Number(ttl),
    json: record.slice(start),
  };
}

const SERVER_TIME = `
local time = redis.call("TIME")
local nowUs = tonumber(time[1]) * 1000000 + tonumber(time[2])
local nowMs = math.floor(nowUs / 1000)
local function fmt(n) return string.format("%.0f", n) end
`;

/**
 * Writes an item, keeping created_at of a live previous version, with its embeddings or none.
 * KEYS: values, updates, namespaces, expiries, vectors. ARGV: key, ns key, ttl minutes or "",
 * value JSON, vectors or "".
 */
export const putItemScript = new RedisScript(`${SERVER_TIME}
local created = fmt(nowUs)
local old = redis.call("HGET", KEYS[1], ARGV[1])
if old then
  local oldCreated, oldExpires = string.match(old, "^(%d+)\\n%d+\\n(%d*)\\n")
  if oldExpires == "" or tonumber(oldExpires) > nowMs then created = oldCreated end
end
local expires = ""
if ARGV[3] ~= "" then expires = fmt(nowMs + tonumber(ARGV[3]) * 60000) end
redis.call("HSET", KEYS[1], ARGV[1], created .. "\\n" .. fmt(nowUs) .. "\\n" .. expires .. "\\n" .. ARGV[3] .. "\\n" .. ARGV[4])
redis.call("ZADD", KEYS[2], fmt(nowUs), ARGV[1])
redis.call("ZADD", KEYS[3], 0, ARGV[2])
local member = ARGV[2] .. "\\0" .. ARGV[1]
if expires == "" then redis.call("ZREM", KEYS[4], member) else redis.call("ZADD", KEYS[4], expires, member) end
if ARGV[5] == "" then redis.call("HDEL", KEYS[5], ARGV[1]) else redis.call("HSET", KEYS[5], ARGV[1], ARGV[5]) end
return 1
`);

/**
 * Removes an item and drops its namespace from the index once empty. With ARGV[3] = "expired"
 * it only removes the item if it has expired by now (the sweeper racing a refresh or a put).
 * KEYS: values, updates, namespaces, expiries, vectors. ARGV: key, ns key, "" | "expired".
 */
export const deleteItemScript = new RedisScript(`${SERVER_TIME}
local member = ARGV[2] .. "\\0" .. ARGV[1]
if ARGV[3] == "expired" then
  local expires = redis.call("ZSCORE", KEYS[4], member)
  if not expires or tonumber(expires) > nowMs then return 0 end
end
redis.call("HDEL", KEYS[1], ARGV[1])
redis.call("HDEL", KEYS[5], ARGV[1])
redis.call("ZREM", KEYS[2], ARGV[1])
redis.call("ZREM", KEYS[4], member)
if redis.call("ZCARD", KEYS[2]) == 0 then redis.call("ZREM", KEYS[3], ARGV[2]) end
return 1
`);

/**
 * Pushes a live item's expiry to now + its TTL. KEYS: values, expiries. ARGV: key, ns key.
 */
export const refreshItemScript = new RedisScript(`${SERVER_TIME}
local record = redis.call("HGET", KEYS[1], ARGV[1])
if not record then return 0 end
local created, updated, expires, ttl, rest = string.match(record, "^(%d+)\\n(%d+)\\n(%d*)\\n([^\\n]*)\\n(.*)$")
if ttl == nil or ttl == "" or (expires ~= "" and tonumber(expires) <= nowMs) then return 0 end
local renewed = fmt(nowMs + tonumber(ttl) * 60000)
redis.call("HSET", KEYS[1], ARGV[1], created .. "\\n" .. updated .. "\\n" .. renewed .. "\\n" .. ttl .. "\\n" .. rest)
redis.call("ZADD", KEYS[2], renewed, ARGV[2] .. "\\0" .. ARGV[1])
return 1
`);
