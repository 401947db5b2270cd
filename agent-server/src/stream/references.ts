import type { CheckedList, ThreadCheckpointer } from "../storage/types.ts";
import { toJsonValue } from "../threads/state.ts";
import { END_EVENT, type LoggedEvent, type NewEvent, pageBytes, type RunEventLog } from "./event-log.ts";
import { StoredListJson } from "./stored-json.ts";

/**
 * Where a root `values` event's data is stored already: the `keys` of the state at a
 * checkpoint, in the event's order, with the JSON of those that are no non-empty list (`inline`). A
 * run's log keeps this instead of a copy of the state, which for a long conversation is most
 * of what a run wrote to Redis. Lists (messages) are what grows; other values stay in the
 * reference, because a channel that was never written (a reducer's default) is not in the
 * checkpoint although LangGraph streams it.
 */
export interface CheckpointValuesRef {
  thread_id: string;
  checkpoint_ns: string;
  checkpoint_id: string;
  keys: string[];
  inline: Record<string, unknown>;
}

/** JSON as UTF-8 in pieces, in order (`CheckpointValues.jsonParts`). */
export type JsonParts = readonly Buffer[];

/** The text of JSON in pieces. */
export const jsonText = (parts: JsonParts) => Buffer.concat(parts).toString();

/**
 * `target` with `values` parsed from `json` (in pieces or as text) the first time it is read
 * (an ordinary property from then on, which `parsed` is told of): a long conversation's state
 * is parsed only by a reader that looks at it.
 */
export function valuesParsedWhenRead<T extends { values: unknown }>(
  target: T,
  json: JsonParts | string,
  parsed?: (values: T["values"]) => void,
): T {
  const settle = (value: T["values"]) => {
    Object.defineProperty(target, "values", { value, writable: true, enumerable: true, configurable: true });
  };
  Object.defineProperty(target, "values", {
    enumerable: true,
    configurable: true,
    get() {
      const value = JSON.parse(typeof json === "string" ? json : jsonText(json)) as T["values"];
      settle(value);
      parsed?.(value);
      return value;
    },
    set: settle,
  });
  return target;
}

/** Values remembered for checkpoints this process's runs reached: readers here need no Redis read. */
const REMEMBERED = 16;
/**
 * A run appends its event before LangGraph's asynchronous checkpoint write lands: a reader on
 * another replica that is that fast waits for it this many times…
 */
const MISSING_RETRIES = 10;
/** …this long each. */
const MISSING_RETRY_MS = 30;

const cacheKey = (ref: CheckpointValuesRef) => `${ref.thread_id}\n${ref.checkpoint_ns}\n${ref.checkpoint_id}`;

/** Where a list's JSON is kept for its next version: the thread, namespace and channel it is the value of. */
const listKey = (thread_id: string, checkpoint_ns: string, channel: string) =>
  `${thread_id}\0${checkpoint_ns}\0${channel}`;

/**
 * `{"key":value,…}` in pieces, each key's value from `valueJson`, in the order of `keys`; a key
 * whose value has no JSON (undefined) is left out, as `JSON.stringify` leaves it out.
 */
export async function objectJson(
  keys: Iterable<string>,
  valueJson: (key: string) => Promise<JsonParts | undefined>,
): Promise<Buffer[]> {
  const parts: Buffer[] = [];
  for (const key of keys) {
    const json = await valueJson(key);
    if (json === undefined) continue;
    parts.push(Buffer.from(`${parts.length === 0 ? "{" : ","}${JSON.stringify(key)}:`), ...json);
  }
  parts.push(Buffer.from(parts.length === 0 ? "{}" : "}"));
  return parts;
}

const inlineJson = (value: unknown): JsonParts | undefined => {
  const json = JSON.stringify(value);
  return json === undefined ? undefined : [Buffer.from(json)];
};

/**
 * The lists an answer of several states (a history page) found unchanged, by list key: a state's
 * leading messages that are the very objects of a later state's list take their texts from it
 * instead of being checked again (`rememberedTexts`). Every state of the page was made before
 * any is written (LangGraph's snapshot code, reducers included, ran), so such a check already
 * says what a second one would; only code editing the objects during the answer (a run on the
 * thread) could differ, and then the older state keeps the text it stored, as it should.
 */
export type CheckedLists = Map<string, CheckedList>;

/**
 * Reads what a `CheckpointValuesRef` stands for, as the JSON the event had: from the stored
 * texts of the checkpoint's lists when this process has just put it (`stored-json.ts`), else
 * from the values this process's runs streamed (the same objects the checkpoint was written
 * from), else from the checkpointer; lists of values read or streamed come from their items'
 * texts too when the checkpointer remembers every item (`valueJson`).
 */
export class CheckpointValues {
  readonly #checkpointer: ThreadCheckpointer;
  readonly #recent = new Map<string, Record<string, unknown>>();
  readonly #lists: StoredListJson;

  constructor(checkpointer: ThreadCheckpointer) {
    this.#checkpointer = checkpointer;
    this.#lists = new StoredListJson(checkpointer.serde);
  }

  /** The graph's values at the checkpoint, kept for the next few reads in this process. */
  remember(ref: CheckpointValuesRef, values: Record<string, unknown>): void {
    const key = cacheKey(ref);
    this.#recent.delete(key);
    this.#recent.set(key, values);
    if (this.#recent.size > REMEMBERED) this.#recent.delete(this.#recent.keys().next().value as string);
  }

  /** The referenced data as JSON text; undefined when the checkpoint is gone (thread pruned or rolled back). */
  async json(ref: CheckpointValuesRef): Promise<string | undefined> {
    const parts = await this.jsonParts(ref);
    return parts && jsonText(parts);
  }

  /**
   * `json` as UTF-8 in pieces, to be written or joined in order: a long conversation's state is
   * already such a piece when this process just put or read it, and is not copied again.
   */
  async jsonParts(ref: CheckpointValuesRef): Promise<JsonParts | undefined> {
    const stored = await this.#fromStoredTexts(ref);
    if (stored !== undefined) return stored;
    const recent = this.#recent.get(cacheKey(ref));
    const values = recent ?? (await this.#read(ref));
    if (values === undefined) return undefined;
    // The read kept the checkpoint's lists with their texts (a run another replica ran): no check needed.
    const read = recent ? undefined : await this.#fromStoredTexts(ref);
    if (read !== undefined) return read;
    const { thread_id, checkpoint_ns, inline } = ref;
    return objectJson(ref.keys, async (key) => {
      if (key in inline) return inlineJson(inline[key]);
      return key in values ? this.valueJson(thread_id, checkpoint_ns, key, values[key]) : undefined;
    });
  }

  /**
   * The event's JSON put together from its inline values and its lists' JSON made from their
   * items' stored texts (`stored-json.ts`), when the checkpointer still holds all of them: a
   * long conversation's state is then neither loaded nor converted and serialised again.
   */
  async #fromStoredTexts(ref: CheckpointValuesRef): Promise<Buffer[] | undefined> {
    const texts = new Map<string, readonly Buffer[]>();
    for (const key of ref.keys) {
      if (key in ref.inline) continue;
      const stored = this.#checkpointer.storedItemTexts?.(ref, key);
      if (!stored) return undefined;
      texts.set(key, stored);
    }
    const { thread_id, checkpoint_ns, inline } = ref;
    return objectJson(ref.keys, async (key) => {
      const stored = texts.get(key);
      return stored ? this.#lists.json(listKey(thread_id, checkpoint_ns, key), stored) : inlineJson(inline[key]);
    });
  }

  /**
   * The API JSON of `value`, the value of `channel` in a state of the thread and namespace: a
   * list from its items' stored texts when the checkpointer remembers every one unchanged (a
   * long conversation this process ran or read before), anything else converted; undefined for
   * what JSON has no form for (a function). `checked`: the lists of the same answer found
   * unchanged so far, by list key (`CheckedLists`); this one is added when it is.
   */
  async valueJson(thread_id: string, checkpoint_ns: string, channel: string, value: unknown, checked?: CheckedLists) {
    const key = listKey(thread_id, checkpoint_ns, channel);
    const texts = Array.isArray(value) ? this.#checkpointer.rememberedItemTexts?.(value, checked?.get(key)) : undefined;
    if (!texts) return inlineJson(toJsonValue(value));
    checked?.set(key, { items: value as unknown[], texts });
    return this.#lists.json(key, texts);
  }

  async #read(ref: CheckpointValuesRef): Promise<Record<string, unknown> | undefined> {
    const { thread_id, checkpoint_ns, checkpoint_id } = ref;
    for (let attempt = 0; ; attempt++) {
      const tuple = await this.#checkpointer.getTuple({ configurable: { thread_id, checkpoint_ns, checkpoint_id } });
      if (tuple) return tuple.checkpoint.channel_values as Record<string, unknown>;
      if (attempt >= MISSING_RETRIES) return undefined;
      await new Promise((resolve) => setTimeout(resolve, MISSING_RETRY_MS));
    }
  }
}

/** A closing entry's data whose `values_at` stands for its `values` (see `runs/worker/settle.ts`). */
interface ClosingWithReference {
  values_at?: CheckpointValuesRef;
  [key: string]: unknown;
}

/**
 * The run event log as readers see it: events stored as references (`ref`) and closing entries
 * whose values are a reference (`values_at`) come back with their data, exactly as if it had
 * been stored. Where the checkpoint is gone, an event's data and a closing entry's values are
 * null (the event keeps its place, so ids and pages stay as the log has them).
 * Pages are cut by `pageBytes` here too, so a log that does not count references (in memory)
 * still reads at most a few states at a time.
 */
export class MaterialisingRunEventLog implements RunEventLog {
  readonly #log: RunEventLog;
  readonly #values: CheckpointValues;

  constructor(log: RunEventLog, values: CheckpointValues) {
    this.#log = log;
    this.#values = values;
  }

  append(runId: string, events: NewEvent[], expireSeconds?: number, attempt?: number): Promise<boolean> {
    return this.#log.append(runId, events, expireSeconds, attempt);
  }

  async range(runId: string, afterId: number, count: number, maxBytes?: number): Promise<LoggedEvent[]> {
    const page = await this.#log.range(runId, afterId, count, maxBytes);
    let budget = maxBytes ?? Number.POSITIVE_INFINITY;
    const cut = page.findIndex((event) => {
      budget -= pageBytes(event);
      return budget <= 0;
    });
    const kept = cut < 0 ? page : page.slice(0, cut + 1);
    return Promise.all(kept.map((event) => this.#materialise(event)));
  }

  startAttempt(runId: string, marker: NewEvent, attempt?: number): Promise<boolean> {
    return this.#log.startAttempt(runId, marker, attempt);
  }

  async last(runId: string): Promise<LoggedEvent | undefined> {
    const event = await this.#log.last(runId);
    return event && this.#materialise(event);
  }

  delete(runIds: string[]): Promise<void> {
    return this.#log.delete(runIds);
  }

  watch(runId: string, listener: (ended: boolean) => void): Promise<() => Promise<void>> {
    return this.#log.watch(runId, listener);
  }

  async #materialise(event: LoggedEvent): Promise<LoggedEvent> {
    if (event.ref) {
      const data = await this.#values.json(JSON.parse(event.ref) as CheckpointValuesRef);
      return { ...event, data: data ?? "null" };
    }
    if (event.event !== END_EVENT || !event.data.includes('"values_at"')) return event;
    const { values_at, ...closing } = JSON.parse(event.data) as ClosingWithReference;
    if (!values_at) return event;
    const values = await this.#values.json(values_at);
    // The state's JSON goes in as text, last, instead of being parsed to be serialised again.
    const head = JSON.stringify({ ...closing, values: null }).slice(0, -5);
    return { ...event, data: `${head}${values ?? "null"}}`, valuesAt: head.length };
  }
}
