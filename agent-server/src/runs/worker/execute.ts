import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { RunnableConfig } from "@langchain/core/runnables";
import { Command, Send } from "@langchain/langgraph";
import type { ServerContext } from "../../context.ts";
import type { AnyCompiledGraph } from "../../graphs/types.ts";
import type { Interrupt, JsonObject } from "../../storage/types.ts";
import {
  type ApiEvent,
  graphStreamModes,
  LegacyMessages,
  mapGraphChunk,
  needsStreamEvents,
} from "../../stream/modes.ts";
import type { CheckpointValuesRef } from "../../stream/references.ts";
import { PROTOCOL_EVENT, ProtocolEventMapper } from "../../thread-stream/events.ts";
import { streamGraphProtocolEvents } from "../../thread-stream/graph-events.ts";
import { toJsonValue } from "../../threads/state.ts";
import type { ClaimedRun } from "../queue/store.ts";
import type { Run, RunCommand } from "../schemas.ts";
import { type EmitReference, ValuesReferences } from "./values-references.ts";

export interface RunError {
  error: string;
  message: string;
}

/**
 * How an execution ended; `cancelled` carries the action that stopped it. `output` is the last
 * root `values` event, what `…/wait` answers as the reference server does (the values when
 * absent): for a run stopped by an interrupt that is `{__interrupt__: [...]}`, so a waiting
 * client can tell it needs a human. `outputAt`: the checkpoint the output was sent as a reference to.
 */
export type ExecutionResult =
  | {
      kind: "done";
      values: unknown;
      output?: unknown;
      outputAt?: CheckpointValuesRef;
      next: string[];
      interrupts: Record<string, Interrupt[]>;
    }
  | { kind: "failed"; error: RunError; values: unknown }
  | { kind: "cancelled"; reason: unknown; values: unknown };

export interface ExecuteOptions {
  signal: AbortSignal;
  emit: (event: ApiEvent) => void;
  /**
   * Where root `values` events that are a checkpoint's state go instead of `emit`, as references
   * (runs on a kept thread streamed through `graph.stream`); without it every event is emitted.
   */
  reference?: EmitReference;
  /** Extra callback handlers (tracing exporters, tests recording the run tree). */
  callbacks?: BaseCallbackHandler[];
}

function toGraphCommand(command: RunCommand): Command {
  const toSend = (target: string | { node: string; input?: unknown }) =>
    typeof target === "string" ? target : new Send(target.node, target.input);
  const goto =
    command.goto == null ? undefined : Array.isArray(command.goto) ? command.goto.map(toSend) : toSend(command.goto);
  return new Command({
    ...(command.resume !== undefined && { resume: command.resume }),
    ...(command.update != null && { update: command.update }),
    ...(goto !== undefined && { goto }),
  } as ConstructorParameters<typeof Command>[0]);
}

const describeError = (error: unknown): RunError =>
  error instanceof Error
    ? { error: error.name || "Error", message: error.message }
    : { error: "Error", message: String(error) };

/** Run config keys as clients send them (snake_case, the API's spelling) → the names LangChain.js reads. */
const CONFIG_KEYS = {
  recursion_limit: "recursionLimit",
  max_concurrency: "maxConcurrency",
  run_name: "runName",
} as const;

/**
 * A run's stored config as a LangChain.js `RunnableConfig`: the API's snake_case keys under their
 * camelCase names (LangGraph.js ignores `recursion_limit`); keys the client did not send stay
 * absent, so the limits a graph bound with `withConfig` still apply.
 */
export function toRunnableConfig(config: JsonObject): RunnableConfig & { metadata?: JsonObject } {
  const result: JsonObject = {};
  for (const [key, value] of Object.entries(config)) {
    if (value === undefined || value === null) continue;
    result[key in CONFIG_KEYS ? CONFIG_KEYS[key as keyof typeof CONFIG_KEYS] : key] = value;
  }
  return result as RunnableConfig & { metadata?: JsonObject };
}

/**
 * The graph config of a run: its stored config plus `thread_id` in the metadata, which every
 * child run (subgraphs, chat models, tools) inherits, so traces group by conversation.
 */
function runGraphConfig(run: Run, attempt: number, graphId: string): RunnableConfig {
  const config = toRunnableConfig(run.kwargs.config);
  return {
    ...config,
    metadata: {
      ...config.metadata,
      ...run.metadata,
      thread_id: run.thread_id,
      run_id: run.run_id,
      assistant_id: run.assistant_id,
      graph_id: graphId,
      run_attempt: attempt,
    },
    runId: run.run_id,
  };
}

/**
 * On a retry, continue from the checkpoint the failed attempt reached instead of replaying the
 * input: checkpoints written since the run was first claimed are its own.
 */
async function retryInput(graph: AnyCompiledGraph, claimed: ClaimedRun, input: unknown) {
  const state = await graph.getState({ configurable: { thread_id: claimed.run.thread_id } });
  const progressed = state.createdAt !== undefined && Date.parse(state.createdAt) >= claimed.firstStartedAt;
  if (!progressed) return { input, finished: false };
  return { input: null, finished: state.next.length === 0 };
}

/** Pending interrupts of a state's tasks, by task id. */
export function interruptsOf(
  tasks: readonly { id: string; interrupts: readonly { id?: string; value?: unknown }[] }[],
) {
  const interrupts: Record<string, Interrupt[]> = {};
  for (const task of tasks) {
    if (task.interrupts.length > 0) {
      interrupts[task.id] = task.interrupts.map((i) => ({ id: i.id, value: toJsonValue(i.value) }));
    }
  }
  return interrupts;
}

type GraphChunk = [string[], string, unknown] | [string, unknown];

const INTERRUPT = "__interrupt__";

const splitChunk = (chunk: GraphChunk): [string[], string, unknown] =>
  chunk.length === 3 ? chunk : [[], chunk[0], chunk[1]];

/**
 * The id of the checkpoint a root `checkpoints` chunk announces when no task follows it (the
 * graph's last step is done and nothing is pending); undefined for any other.
 */
function lastCheckpointId(chunk: unknown): string | undefined {
  const saved = chunk as { config?: RunnableConfig; next?: unknown; tasks?: unknown } | null;
  const id = saved?.config?.configurable?.checkpoint_id;
  const done = Array.isArray(saved?.next) && saved.next.length === 0;
  return done && Array.isArray(saved?.tasks) && saved.tasks.length === 0 && typeof id === "string" ? id : undefined;
}

/** Runs the graph of a claimed run, emitting API stream events as they are produced. */
export async function executeRun(
  ctx: ServerContext,
  claimed: ClaimedRun,
  options: ExecuteOptions,
): Promise<ExecutionResult> {
  const { run, attempt } = claimed;
  const { signal, emit } = options;
  // The root graph's latest state, converted to JSON once: by its `values` event, else when needed.
  let latest: unknown = null;
  let latestJson: unknown;
  // LangGraph streams `{__interrupt__}` as values when an interrupt (or interrupt_before/after) stops the graph.
  let interrupted = false;
  const values = () => {
    latestJson ??= toJsonValue(latest);
    return latestJson;
  };
  let references: ValuesReferences | undefined;
  try {
    const graphId = String((run.kwargs.config.configurable as JsonObject | undefined)?.graph_id ?? "");
    const config = runGraphConfig(run, attempt, graphId);
    const graph = await ctx.graphs.get(graphId, config);
    let input: unknown = run.kwargs.command ? toGraphCommand(run.kwargs.command) : (run.kwargs.input ?? null);
    if (claimed.resumed && !run.kwargs.temporary) {
      const retry = await retryInput(graph, claimed, input);
      if (retry.finished) return await finalState(graph, run, () => null);
      input = retry.input;
    }
    const requested = new Set(run.kwargs.stream_mode);
    const viaStreamEvents = needsStreamEvents(run.kwargs.stream_mode, run.kwargs.subgraphs);
    // A temporary thread's checkpoints go with it: its events must carry their data.
    const referencing = !viaStreamEvents && !run.kwargs.protocol && !run.kwargs.temporary && requested.has("values");
    if (referencing && options.reference) {
      const inline = (chunk: unknown) => {
        for (const event of mapGraphChunk([], "values", chunk, requested, run.kwargs.subgraphs)) {
          if (chunk === latest) latestJson = event.data;
          emit(event);
        }
      };
      references = new ValuesReferences(run.thread_id, inline, options.reference);
    }
    const modes = graphStreamModes(run.kwargs.stream_mode, viaStreamEvents);
    const streamOptions = {
      ...config,
      // No list at all when empty: even an empty one makes LangChain report every step of the run.
      callbacks: options.callbacks?.length ? options.callbacks : undefined,
      context: run.kwargs.context ?? undefined,
      interruptBefore: run.kwargs.interrupt_before ?? undefined,
      interruptAfter: run.kwargs.interrupt_after ?? undefined,
      // The saved checkpoints tell which values events can be references.
      streamMode: references && !modes.includes("checkpoints") ? [...modes, "checkpoints"] : modes,
      subgraphs: run.kwargs.subgraphs,
      signal,
    };
    const onChunk = (chunk: GraphChunk, legacy?: LegacyMessages) => {
      const [namespace, mode, data] = splitChunk(chunk);
      const rootValues = mode === "values" && namespace.length === 0;
      if (rootValues) {
        if (data && typeof data === "object" && INTERRUPT in data) interrupted = true;
        latest = data;
        latestJson = undefined;
      }
      if (mode === "checkpoints" && namespace.length === 0 && !run.kwargs.temporary) {
        const last = lastCheckpointId(data);
        if (last !== undefined) ctx.storage.checkpointer.graphFinished?.(run.thread_id, last);
      }
      if (references) {
        if (rootValues) return references.hold(data);
        if (mode === "checkpoints" && namespace.length === 0) references.checkpoint(data);
        else references.release();
      }
      for (const event of mapGraphChunk(namespace, mode, data, requested, run.kwargs.subgraphs)) {
        if (rootValues && event.event === "values") latestJson = event.data;
        emit(event);
      }
      // After the `values` event that carries them, as the reference server sends them.
      if (rootValues && legacy) for (const event of legacy.values(data)) emit(event);
    };
    if (run.kwargs.protocol) {
      // The protocol's events are `streamEvents` v3's, by LangGraph's own converter, as on the
      // reference server (without the rest of v3: see graph-events.ts).
      const mapper = new ProtocolEventMapper(graphId);
      emit({ event: PROTOCOL_EVENT, data: mapper.started() });
      await streamGraphProtocolEvents(graph, input, streamOptions, (event) => {
        const { namespace, data } = event.params;
        if (event.method === "values" && namespace.length === 0) {
          if (data && typeof data === "object" && INTERRUPT in data) interrupted = true;
          latest = data;
          latestJson = undefined;
        }
        for (const stored of mapper.map(event)) emit({ event: PROTOCOL_EVENT, data: stored });
      });
      if (!signal.aborted) emit({ event: PROTOCOL_EVENT, data: mapper.finished(interrupted) });
    } else if (viaStreamEvents) {
      const legacy = requested.has("messages") ? new LegacyMessages() : undefined;
      const events = graph.streamEvents(
        input as any,
        { ...streamOptions, version: "v2" } as any,
      ) as unknown as AsyncIterable<{
        event: string;
        run_id: string;
        tags?: string[];
        metadata?: unknown;
        data: { chunk?: unknown };
      }>;
      for await (const event of events) {
        if (event.tags?.includes("langsmith:hidden")) continue;
        if (event.event === "on_chain_stream" && event.run_id === run.run_id) {
          onChunk(event.data.chunk as GraphChunk, legacy);
          continue;
        }
        if (requested.has("events")) emit({ event: "events", data: toJsonValue(event) });
        if (legacy && event.event === "on_chat_model_stream" && !event.tags?.includes("nostream")) {
          for (const message of legacy.token(event.data.chunk as never, event.metadata)) emit(message);
        }
      }
    } else {
      const stream = (await graph.stream(input as any, streamOptions as any)) as AsyncIterable<GraphChunk>;
      for await (const chunk of stream) onChunk(chunk);
      references?.release();
    }
    if (signal.aborted) return { kind: "cancelled", reason: signal.reason, values: values() };
    // A run that went to its end leaves nothing pending, and `stream` sends every state channel
    // as values (its default output keys, what `getState` reads): no need to read the state back.
    if (!interrupted && latest !== null) {
      if (!run.kwargs.temporary) ctx.storage.checkpointer.graphReturned?.(run.thread_id);
      // Converted only when read: with `outputAt`, settling takes their JSON from the checkpoint.
      return {
        kind: "done",
        get values() {
          return values();
        },
        get output() {
          return values();
        },
        outputAt: references?.latest,
        next: [],
        interrupts: {},
      };
    }
    return await finalState(graph, run, values);
  } catch (error) {
    references?.release();
    if (signal.aborted) return { kind: "cancelled", reason: signal.reason, values: values() };
    return { kind: "failed", error: describeError(error), values: values() };
  }
}

/**
 * Values, pending nodes and interrupts after the run; a temporary thread's state is what was
 * streamed. The output is the last streamed `values` event, else (nothing streamed) the state.
 */
async function finalState(graph: AnyCompiledGraph, run: Run, streamed: () => unknown): Promise<ExecutionResult> {
  if (run.kwargs.temporary) return { kind: "done", values: streamed(), output: streamed(), next: [], interrupts: {} };
  const state = await graph.getState({ configurable: { thread_id: run.thread_id } });
  const values = toJsonValue(state.values);
  return {
    kind: "done",
    values,
    output: streamed() ?? values,
    next: [...state.next],
    interrupts: interruptsOf(state.tasks),
  };
}
