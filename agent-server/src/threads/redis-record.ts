import type { JsonObject, Thread, ThreadUpdate } from "../storage/types.ts";
import {
  type CheckpointValues,
  type CheckpointValuesRef,
  type JsonParts,
  valuesParsedWhenRead,
} from "../stream/references.ts";
import { applyThreadUpdate } from "./records.ts";

/**
 * A thread as Redis keeps it: without its values when they are a checkpoint's state
 * (`values_at`, what a run that ended leaves), so a run on a long conversation does not write
 * the conversation into the record again, nor send it twice in the compare-and-set. Records
 * with `values` inline (written before this layout, or by state updates and copies) read as they are.
 */
export type StoredThread = Omit<Thread, "values"> & { values?: JsonObject | null; values_at?: CheckpointValuesRef };

/** Thread values this process wrote or read, by checkpoint: a checkpoint never changes, so any replica may keep them. */
const REMEMBERED = 32;

const refKey = (ref: CheckpointValuesRef) =>
  `${ref.thread_id}\n${ref.checkpoint_ns}\n${ref.checkpoint_id}\n${ref.keys.join("\n")}`;

/** Values read as JSON and not parsed yet (a thread's values may be a list themselves). */
class UnparsedValues {
  readonly json: JsonParts;
  constructor(json: JsonParts) {
    this.json = json;
  }
}

/** Reads the values a record refers to: from the last few written or read here, else from the checkpoint. */
export class ThreadValues {
  readonly #checkpoints: CheckpointValues;
  /** Values, or their JSON until something reads them. */
  readonly #recent = new Map<string, JsonObject | UnparsedValues>();

  constructor(checkpoints: CheckpointValues) {
    this.#checkpoints = checkpoints;
  }

  remember(ref: CheckpointValuesRef, values: JsonObject | UnparsedValues): void {
    const key = refKey(ref);
    this.#recent.delete(key);
    this.#recent.set(key, values);
    if (this.#recent.size > REMEMBERED) this.#recent.delete(this.#recent.keys().next().value as string);
  }

  rememberJson(ref: CheckpointValuesRef, json: JsonParts): void {
    this.remember(ref, new UnparsedValues(json));
  }

  /** The values, or their JSON (parsed when a reader looks at them); null when the checkpoint is gone. */
  async read(ref: CheckpointValuesRef): Promise<JsonObject | UnparsedValues | null> {
    const known = this.#recent.get(refKey(ref));
    if (known !== undefined) return known;
    const json = await this.#checkpoints.jsonParts(ref);
    if (json === undefined) return null;
    const unparsed = new UnparsedValues(json);
    this.remember(ref, unparsed);
    return unparsed;
  }
}

/** The record after `update`, as stored: a reference replaces inline values and the other way round. */
export function applyStoredUpdate(
  record: StoredThread,
  update: ThreadUpdate,
  now: string,
  runsInFlight: boolean,
): StoredThread {
  const { values_at: _ref, values: _values, values_json: _json, ...rest } = update;
  const next: StoredThread = applyThreadUpdate(record as Thread, rest, now, runsInFlight);
  if (update.values_at) {
    delete next.values;
    next.values_at = update.values_at;
  } else if (update.values !== undefined) {
    delete next.values_at;
    next.values = update.values;
  }
  return next;
}

/**
 * The record's values as far as a filter on `keys` reads them, without reading the checkpoint
 * when the reference holds all of those inline (keys that are no non-empty list, or absent);
 * undefined when the checkpoint must be read.
 */
export function filterableValues(record: StoredThread, keys: string[]): JsonObject | null | undefined {
  const ref = record.values_at;
  if (!ref) return record.values ?? null;
  return keys.every((key) => key in ref.inline || !ref.keys.includes(key)) ? ref.inline : undefined;
}

/** The thread as the API shows it: values from the record or from the checkpoint it refers to. */
export async function materialise(record: StoredThread, values: ThreadValues): Promise<Thread> {
  if (!record.values_at) return { ...record, values: record.values ?? null };
  const { values_at: ref, ...rest } = record;
  const read = await values.read(ref);
  if (!(read instanceof UnparsedValues)) return { ...rest, values: read };
  // Most reads of a thread (a run starting or ending on it) do not look at its values.
  return valuesParsedWhenRead<Thread>({ ...rest, values: null }, read.json, (parsed) => {
    if (parsed) values.remember(ref, parsed);
  });
}
