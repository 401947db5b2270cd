import type { StateSnapshot } from "@langchain/langgraph";
import { type CheckedLists, type CheckpointValues, type JsonParts, objectJson } from "../stream/references.ts";
import { emptyThreadState, toJsonValue, toThreadStateWithoutValues } from "./state.ts";

/**
 * Thread states as the API's JSON, in pieces to be written in order: exactly what
 * `JSON.stringify(toThreadState(snapshot))` gives, but a long list in the values (a
 * conversation's messages) comes from its items' stored texts when the checkpointer remembers
 * every one unchanged (`CheckpointValues.valueJson`). Its JSON is then the one a run's answer or
 * an earlier read made, with only the messages added since converted (none after a run in
 * this process), and a history page's older states are views of the same bytes.
 */

const piece = (text: string) => Buffer.from(text);

/** `values` is the first key of a `ThreadState`: the rest follows it after a comma. */
const OPEN_VALUES = piece('{"values":');

/** An object `toJsonValue` converts key by key (no message, date or `toJSON` of its own). */
const isPlainRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" &&
  value !== null &&
  Object.getPrototypeOf(value) === Object.prototype &&
  !("toJSON" in value) &&
  !("getType" in value);

async function valuesJson(
  snapshot: StateSnapshot,
  checkpointValues: CheckpointValues,
  checked?: CheckedLists,
): Promise<JsonParts> {
  const { values } = snapshot;
  const threadId = snapshot.config?.configurable?.thread_id;
  if (!isPlainRecord(values) || typeof threadId !== "string") return [piece(JSON.stringify(toJsonValue(values)))];
  const namespace = String(snapshot.config?.configurable?.checkpoint_ns ?? "");
  // As `toJsonValue` converts an object: its own keys, those with a value.
  const keys = Object.keys(values).filter((key) => values[key] !== undefined);
  return objectJson(keys, (key) => checkpointValues.valueJson(threadId, namespace, key, values[key], checked));
}

/**
 * One state's JSON; a thread with no graph yet (no snapshot) has the empty state. `checked`:
 * the lists other states of the same answer found unchanged (`CheckedLists`).
 */
export async function threadStateJson(
  snapshot: StateSnapshot | undefined,
  checkpointValues: CheckpointValues,
  checked?: CheckedLists,
): Promise<JsonParts> {
  if (!snapshot) return [piece(JSON.stringify(emptyThreadState()))];
  const after = JSON.stringify(toThreadStateWithoutValues(snapshot));
  return [OPEN_VALUES, ...(await valuesJson(snapshot, checkpointValues, checked)), piece(`,${after.slice(1)}`)];
}

/** A list of states' JSON (history), newest first as given. */
export async function threadStatesJson(
  snapshots: readonly StateSnapshot[],
  checkpointValues: CheckpointValues,
): Promise<JsonParts> {
  const parts: Buffer[] = [];
  const checked: CheckedLists = new Map();
  for (const snapshot of snapshots) {
    parts.push(piece(parts.length === 0 ? "[" : ","), ...(await threadStateJson(snapshot, checkpointValues, checked)));
  }
  parts.push(piece(parts.length === 0 ? "[]" : "]"));
  return parts;
}
