import type { RedisClient } from "../storage/redis-client.ts";
import { RedisScript } from "../storage/redis-script.ts";

/** One event of a run's stream; `id` is its 0-based position (the SSE `id:`; `0` is `metadata`). */
export interface LoggedEvent {
  id: number;
  event: string;
  /** The event's data as single-line JSON text ("" where a raw log read a `ref`). */
  data: string;
  /**
   * The reference the data is read from (see `stream/references.ts`), as stored. A materialising
   * log fills `data` in and keeps it, so that readers count the page as the log did (`pageBytes`).
   */
  ref?: string;
  /**
   * A closing entry whose values a materialising log read from their checkpoint: where they
   * start in `data` (they run to its last character but one), so that `…/wait` answers them as
   * the JSON they are, without parsing them to serialise them again.
   */
  valuesAt?: number;
}

/** What is appended: an event with its data, or with "" and the reference its data is read from. */
export interface NewEvent {
  event: string;
  data: string;
  ref?: string;
}

/** Name of the log entry that closes a run's stream; never sent to clients. */
export const END_EVENT = "__end__";

/**
 * Every event a run produced, in order, readable from any process: the source of streams,
 * joins, resumes (`Last-Event-ID`) and `…/wait` results.
 */
export interface RunEventLog {
  /**
   * Appends in order; with `expireSeconds` (the closing append) the log is kept that much longer.
   * With `attempt` (a run's worker), only while that attempt holds the run's lease, checked in the
   * same step: false when it does not (another worker took the run over; nothing appended).
   */
  append(runId: string, events: NewEvent[], expireSeconds?: number, attempt?: number): Promise<boolean>;
  /**
   * Up to `count` events with an id greater than `afterId` (`-1`: from the start), stopping after
   * the one whose data (`pageBytes`) brings the page to `maxBytes` (default: no limit), so a page
   * holds less than `maxBytes` plus one event. A page that is short of both limits is all there is.
   */
  range(runId: string, afterId: number, count: number, maxBytes?: number): Promise<LoggedEvent[]>;
  /**
   * Starts a retried attempt: appends `marker` (its `metadata` event) and drops every earlier
   * entry in one step, so the log holds only this attempt's events. Ids keep increasing: a reader
   * from -1 starts at the marker, one that was reading the failed attempt gets the marker next.
   * Fenced like `append`: with `attempt`, false (nothing changed) unless it holds the run's lease.
   */
  startAttempt(runId: string, marker: NewEvent, attempt?: number): Promise<boolean>;
  /** The last event, to tell whether the stream has ended. */
  last(runId: string): Promise<LoggedEvent | undefined>;
  delete(runIds: string[]): Promise<void>;
  /** Calls `listener` whenever events are appended to the run's log (in any process); `ended` with the closing entry. */
  watch(runId: string, listener: (ended: boolean) => void): Promise<() => Promise<void>>;
}

/** Notification payloads: events were appended / the closing entry was appended. */
const APPENDED = "1";
const ENDED = "end";

/**
 * Lua: whether `attempt` holds the lease of the run whose record is `record`: the check of RENEW
 * and FINISH (`runs/queue/redis-scripts.ts`, whose keys the log shares): the record's attempt is
 * this one and the run is the one executing on its thread (`<prefix>ta:<thread id>`).
 */
const HOLDS_LEASE = `
local function holdsLease(record, attempt, prefix, runId)
  if attempt == '' then return true end
  local tid = redis.call('HGET', record, 'thread_id')
  return tid and redis.call('HGET', record, 'attempt') == attempt and redis.call('GET', prefix..'ta:'..tid) == runId
end
`;

/**
 * Appends in one call, trimming the oldest entries beyond about `maxEvents` (`MAXLEN ~`: Redis
 * drops whole stream nodes, so a log may hold up to one node, 100 entries, more). KEYS: the run's
 * stream (also its channel name), the run's record. ARGV: seconds to keep the log ('' to leave
 * its expiry alone), the notification, the entry cap, the fencing attempt ('' = unfenced), the
 * key prefix, the run id, then each event's name, field (`data` or `ref`) and value. Returns 0
 * when refused by the fence.
 */
const APPEND_SCRIPT = new RedisScript(`${HOLDS_LEASE}
if not holdsLease(KEYS[2], ARGV[4], ARGV[5], ARGV[6]) then return 0 end
for i = 7, #ARGV, 3 do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '0-*', 'event', ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
if ARGV[1] ~= '' then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
redis.call('PUBLISH', KEYS[1], ARGV[2])
return 1
`);

/**
 * Appends the marker of a retried attempt and trims every entry before it. KEYS: the stream, the
 * run's record. ARGV: event, data, the fencing attempt ('' = unfenced), the key prefix, the run id. Returns 0 when the
 * attempt does not hold the lease.
 */
const START_ATTEMPT_SCRIPT = new RedisScript(`${HOLDS_LEASE}
if not holdsLease(KEYS[2], ARGV[3], ARGV[4], ARGV[5]) then return 0 end
local id = redis.call('XADD', KEYS[1], '0-*', 'event', ARGV[1], 'data', ARGV[2])
redis.call('XTRIM', KEYS[1], 'MINID', id)
redis.call('PUBLISH', KEYS[1], '${APPENDED}')
return 1
`);

/**
 * XRANGE cut after the entry that uses up a byte budget, so a page of large events is not sent
 * whole. KEYS: the run's stream. ARGV: the exclusive start id, the count, the budget, what a
 * reference is counted as (its data is not known here). Replies `[id, event, data, ref]`
 * (`ref` '' for an event stored with its data).
 */
const RANGE_SCRIPT = new RedisScript(`
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
local budget = tonumber(ARGV[3])
local page = {}
for i = 1, #entries do
  local fields = entries[i][2]
  local event, data, ref = '', 'null', ''
  for j = 1, #fields, 2 do
    local name = fields[j]
    if name == 'event' then event = fields[j + 1]
    elseif name == 'data' then data = fields[j + 1]
    elseif name == 'ref' then ref = fields[j + 1]; data = '' end
  end
  page[i] = {entries[i][1], event, data, ref}
  budget = budget - (ref == '' and #data or tonumber(ARGV[4]))
  if budget <= 0 then break end
end
return page
`);

/**
 * What a reference counts for in a page's byte budget: the data it stands for is usually a
 * conversation's state, so a page of them stays a few states long.
 */
export const REFERENCE_PAGE_BYTES = 1 << 16;

/** What an event counts for in a page's byte budget (`RunEventLog.range`). */
export const pageBytes = (event: { data: string; ref?: string }): number =>
  event.ref ? REFERENCE_PAGE_BYTES : event.data.length;

type StreamEntries = { id: string; message: Record<string, string> }[];

const sequence = (id: string) => Number(id.slice(id.indexOf("-") + 1)) - 1;

const logged = (id: string, event: string, data: string, ref: string | undefined): LoggedEvent =>
  ref ? { id: sequence(id), event, data: "", ref } : { id: sequence(id), event, data };

const toLogged = (entries: StreamEntries): LoggedEvent[] =>
  entries.map(({ id, message }) => logged(id, message.event ?? "", message.data ?? "null", message.ref));

/**
 * Most entries a run's log keeps by default (RUN_EVENT_LOG_MAX_EVENTS): a run streaming tokens
 * emits about one event per token, so this is a very long run; at a few hundred bytes an event
 * (large states are stored as references) it bounds a log to tens of MB of Redis.
 */
export const DEFAULT_MAX_LOGGED_EVENTS = 100_000;

/**
 * A Redis Stream per run (`ev:<run id>`) with entry ids `0-1`, `0-2`, … so the SSE id is the
 * sequence number; appends publish on a channel of the same name for readers to wake up. Each
 * append trims the log to about `maxEvents` entries, dropping the oldest (see `stream/reader.ts`
 * for what a reader of the dropped ones gets).
 */
export class RedisRunEventLog implements RunEventLog {
  readonly #redis: RedisClient;
  readonly #subscriber: RedisClient;
  readonly #prefix: string;
  readonly #maxEvents: number;

  /** `subscriber` is a dedicated connection in subscribe mode. */
  constructor(redis: RedisClient, subscriber: RedisClient, prefix: string, maxEvents = DEFAULT_MAX_LOGGED_EVENTS) {
    this.#redis = redis;
    this.#subscriber = subscriber;
    this.#prefix = prefix;
    this.#maxEvents = maxEvents;
  }

  #key(runId: string): string {
    return `${this.#prefix}ev:${runId}`;
  }

  /** The run's record in the run queue (`runs/queue/redis-scripts.ts`): what fenced appends check. */
  #record(runId: string): string {
    return `${this.#prefix}run:${runId}`;
  }

  async append(runId: string, events: NewEvent[], expireSeconds?: number, attempt?: number): Promise<boolean> {
    if (events.length === 0) return true;
    const notification = events.some(({ event }) => event === END_EVENT) ? ENDED : APPENDED;
    const expiry = expireSeconds === undefined ? "" : String(expireSeconds);
    const fence = attempt === undefined ? "" : String(attempt);
    const args = [expiry, notification, String(this.#maxEvents), fence, this.#prefix, runId];
    for (const entry of events) {
      if (entry.ref) args.push(entry.event, "ref", entry.ref);
      else args.push(entry.event, "data", entry.data);
    }
    return (await APPEND_SCRIPT.run(this.#redis, [this.#key(runId), this.#record(runId)], args)) === 1;
  }

  async range(
    runId: string,
    afterId: number,
    count: number,
    maxBytes = Number.MAX_SAFE_INTEGER,
  ): Promise<LoggedEvent[]> {
    const args = [`(0-${afterId + 1}`, String(count), String(maxBytes), String(REFERENCE_PAGE_BYTES)];
    const page = (await RANGE_SCRIPT.run(this.#redis, [this.#key(runId)], args)) as [string, string, string, string][];
    return page.map(([id, event, data, ref]) => logged(id, event, data, ref));
  }

  async startAttempt(runId: string, marker: NewEvent, attempt?: number): Promise<boolean> {
    const args = [marker.event, marker.data, attempt === undefined ? "" : String(attempt), this.#prefix, runId];
    return (await START_ATTEMPT_SCRIPT.run(this.#redis, [this.#key(runId), this.#record(runId)], args)) === 1;
  }

  async last(runId: string): Promise<LoggedEvent | undefined> {
    const entries = await this.#redis.xRevRange(this.#key(runId), "+", "-", { COUNT: 1 });
    return toLogged(entries as StreamEntries)[0];
  }

  async delete(runIds: string[]): Promise<void> {
    if (runIds.length > 0) await this.#redis.del(runIds.map((runId) => this.#key(runId)));
  }

  async watch(runId: string, listener: (ended: boolean) => void): Promise<() => Promise<void>> {
    const channel = this.#key(runId);
    const onMessage = (message: string) => listener(message === ENDED);
    await this.#subscriber.subscribe(channel, onMessage);
    return () => this.#subscriber.unsubscribe(channel, onMessage);
  }
}
