import type { RunnableConfig } from "@langchain/core/runnables";
import type { CheckpointValuesRef } from "../../stream/references.ts";
import { toJsonValue } from "../../threads/state.ts";

/** Sends a root `values` event as a reference to the checkpoint holding the same values. */
export type EmitReference = (ref: CheckpointValuesRef, values: Record<string, unknown>) => void;

const isValuesObject = (chunk: unknown): chunk is Record<string, unknown> =>
  typeof chunk === "object" && chunk !== null && !Array.isArray(chunk) && !("__interrupt__" in chunk);

/** LangGraph's full `checkpoints` chunk (not the `{id, step}` envelope): the config it was saved under and its values. */
const savedCheckpoint = (chunk: unknown): { config: RunnableConfig; values: Record<string, unknown> } | undefined => {
  const saved = chunk as { config?: RunnableConfig; values?: unknown } | null;
  const id = saved?.config?.configurable?.checkpoint_id;
  return typeof id === "string" && isValuesObject(saved?.values)
    ? { config: saved.config as RunnableConfig, values: saved.values }
    : undefined;
};

/**
 * Turns a run's root `values` events into references where they are a checkpoint's state.
 * LangGraph streams a step's values, saves that step's checkpoint, then streams the checkpoint
 * (`checkpoints` mode, which the run asks for): a values event is held until that checkpoint
 * shows the same objects under every key, and then goes out as the checkpoint's reference; any
 * other chunk first lets it go out as it is, so the order of events never changes.
 */
export class ValuesReferences {
  readonly #threadId: string;
  readonly #inline: (chunk: unknown) => void;
  readonly #reference: EmitReference;
  #held: unknown;
  #holding = false;
  /** The reference of the latest root values, while they are the run's latest. */
  latest: CheckpointValuesRef | undefined;

  /** `inline` emits a values chunk as an ordinary event. */
  constructor(threadId: string, inline: (chunk: unknown) => void, reference: EmitReference) {
    this.#threadId = threadId;
    this.#inline = inline;
    this.#reference = reference;
  }

  /** A root values chunk, sent once the next chunk tells how. */
  hold(chunk: unknown): void {
    this.release();
    this.latest = undefined;
    this.#held = chunk;
    this.#holding = true;
  }

  /** A root `checkpoints` chunk: the held values go out as its reference when they are its state. */
  checkpoint(chunk: unknown): void {
    if (!this.#holding) return;
    const saved = savedCheckpoint(chunk);
    const values = this.#held;
    if (!saved || !isValuesObject(values)) return this.release();
    const keys = Object.keys(values);
    if (!keys.every((key) => key in saved.values && saved.values[key] === values[key])) return this.release();
    this.#holding = false;
    this.#held = undefined;
    const configurable = saved.config.configurable ?? {};
    const inline: Record<string, unknown> = {};
    for (const key of keys) {
      const value = values[key];
      if (!Array.isArray(value) || value.length === 0) inline[key] = toJsonValue(value);
    }
    this.latest = {
      thread_id: this.#threadId,
      checkpoint_ns: String(configurable.checkpoint_ns ?? ""),
      checkpoint_id: String(configurable.checkpoint_id),
      keys,
      inline,
    };
    this.#reference(this.latest, values);
  }

  /** Sends held values as an ordinary event (another chunk came first, or the stream ended). */
  release(): void {
    if (!this.#holding) return;
    const chunk = this.#held;
    this.#holding = false;
    this.#held = undefined;
    this.#inline(chunk);
  }
}
