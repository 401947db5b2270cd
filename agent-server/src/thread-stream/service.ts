import type { IncomingHttpHeaders } from "node:http";
import { HttpError, toValidationIssues, type ValidationIssue } from "@agentplane/common";
import type { z } from "zod";
import type { RequestAuth } from "../custom-auth/authorize.ts";
import type { RunService } from "../runs/service.ts";
import type { RunEventLog } from "../stream/event-log.ts";
import type { ThreadService } from "../threads/service.ts";
import { toSeq } from "./events.ts";
import {
  AgentGetTreeParamsSchema,
  type Command,
  InputRespondParamsSchema,
  ListCheckpointsParamsSchema,
  RunStartParamsSchema,
  StateForkParamsSchema,
  StateGetParamsSchema,
} from "./schemas.ts";
import { runAgentTree } from "./tree.ts";

/** How long a thread's list of protocol runs outlives its last run.start (refreshed by each). */
const INDEX_TTL_SECONDS = 30 * 24 * 3600;

/** The event log that lists a thread's protocol runs in start order (entry n: the run with ordinal n + 1). */
export const runIndexId = (threadId: string) => `protocol-runs:${threadId}`;

/** One entry of a thread's run list. */
export interface IndexedRun {
  run_id: string;
  graph_id: string;
}

export type CommandResponse =
  | { type: "success"; id: number; result: Record<string, unknown>; meta: Record<string, unknown> }
  | { type: "error"; id: number | null; error: string; message: string; detail?: ValidationIssue[] };

/** A command that cannot be applied: its protocol error code and the HTTP status it is answered with. */
export class CommandError extends Error {
  readonly status: number;
  readonly code: string;
  readonly detail?: ValidationIssue[];

  constructor(status: number, code: string, message: string, detail?: ValidationIssue[]) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail;
  }
}

/** Protocol error codes of the HTTP errors the run and thread services throw. */
const CODES: Record<number, string> = { 404: "no_such_run", 409: "invalid_argument", 422: "invalid_argument" };

export function parseParams<S extends z.ZodType>(schema: S, command: Command): z.output<S> {
  const params = command.params ?? {};
  const parsed = schema.safeParse(params);
  if (parsed.success) return parsed.data;
  const detail = toValidationIssues(parsed.error, "body", params).map((issue) => ({
    ...issue,
    loc: ["body", "params", ...issue.loc.slice(1)],
  }));
  const message = detail.map((issue) => `${issue.loc.slice(2).join(".") || "params"}: ${issue.msg}`).join("; ");
  throw new CommandError(422, "invalid_argument", `${command.method}: ${message}`, detail);
}

/**
 * The commands of the thread-centric protocol. It keeps nothing in memory: runs are ordinary
 * queued runs marked `protocol` (any replica executes them), listed per thread in an event log
 * so every replica numbers their events the same way (see `events.ts`).
 */
export class ThreadProtocolService {
  readonly #runs: RunService;
  readonly #threads: ThreadService;
  readonly #events: RunEventLog;

  constructor(runs: RunService, threads: ThreadService, events: RunEventLog) {
    this.#runs = runs;
    this.#threads = threads;
    this.#events = events;
  }

  /**
   * Runs `command` (as `auth`'s user under custom auth: another user's thread is unknown); a
   * failure is an error response carrying the HTTP status to answer with.
   */
  async handle(
    threadId: string,
    command: Command,
    headers: IncomingHttpHeaders,
    auth?: RequestAuth,
  ): Promise<{ status: number; body: CommandResponse }> {
    try {
      const { result, ordinal } = await this.#apply(threadId, command, headers, auth);
      const meta = { thread_id: threadId, ...(ordinal !== undefined && { applied_through_seq: toSeq(ordinal, 0) }) };
      return { status: 200, body: { type: "success", id: command.id, result, meta } };
    } catch (error) {
      const failure =
        error instanceof CommandError
          ? error
          : error instanceof HttpError && error.status < 500
            ? new CommandError(
                error.status,
                CODES[error.status] ?? "invalid_argument",
                typeof error.detail === "string" ? error.detail : error.message,
                typeof error.detail === "string" ? undefined : error.detail,
              )
            : undefined;
      if (!failure) throw error;
      const body: CommandResponse = {
        type: "error",
        id: command.id,
        error: failure.code,
        message: failure.message,
        ...(failure.detail && { detail: failure.detail }),
      };
      return { status: failure.status, body };
    }
  }

  async #apply(
    threadId: string,
    command: Command,
    headers: IncomingHttpHeaders,
    auth: RequestAuth | undefined,
  ): Promise<{ result: Record<string, unknown>; ordinal?: number }> {
    switch (command.method) {
      case "run.start":
        return this.#start(threadId, command, headers, auth);
      case "input.respond":
        return this.#respond(threadId, command, headers, auth);
      case "state.get":
        return { result: await this.#state(threadId, command, auth) };
      case "state.listCheckpoints":
        return { result: await this.#checkpoints(threadId, command, auth) };
      case "state.fork":
        return this.#fork(threadId, command, headers, auth);
      case "agent.getTree":
        return { result: await this.#tree(threadId, command, auth) };
      // Not implemented by the reference server either (it answers `input.inject` as unknown).
      case "subscription.subscribe":
      case "subscription.unsubscribe":
      case "subscription.reconnect":
        throw new CommandError(422, "not_supported", `${command.method} is not supported by this server yet.`);
      default:
        throw new CommandError(422, "unknown_command", `Unknown protocol command: ${command.method}`);
    }
  }

  /** Creates a protocol run and lists it on the thread; its ordinal numbers its events. */
  async #createRun(
    threadId: string,
    payload: Parameters<RunService["create"]>[1],
    headers: IncomingHttpHeaders,
    auth: RequestAuth | undefined,
  ): Promise<{ runId: string; ordinal: number }> {
    const run = await this.#runs.create(
      threadId,
      { ...payload, stream_mode: ["values"], stream_subgraphs: true, stream_resumable: true, if_not_exists: "create" },
      headers,
      { protocol: true, auth },
    );
    const graphId = String((run.kwargs.config.configurable as Record<string, unknown> | undefined)?.graph_id ?? "");
    const entry: IndexedRun = { run_id: run.run_id, graph_id: graphId };
    const id = runIndexId(threadId);
    await this.#events.append(id, [{ event: "run", data: JSON.stringify(entry) }], INDEX_TTL_SECONDS);
    const last = await this.#events.last(id);
    return { runId: run.run_id, ordinal: (last?.id ?? 0) + 1 };
  }

  async #start(threadId: string, command: Command, headers: IncomingHttpHeaders, auth: RequestAuth | undefined) {
    const { multitaskStrategy, ...params } = parseParams(RunStartParamsSchema, command);
    const { runId, ordinal } = await this.#createRun(
      threadId,
      { ...params, multitask_strategy: params.multitask_strategy ?? multitaskStrategy ?? "enqueue" },
      headers,
      auth,
    );
    return { result: { run_id: runId }, ordinal };
  }

  /** The assistant the thread last ran: what resumes and forks run. */
  async #assistantOf(threadId: string, auth: RequestAuth | undefined): Promise<string> {
    const thread = await this.#threads.get(threadId, auth);
    const assistant = thread.metadata.assistant_id ?? thread.metadata.graph_id;
    if (typeof assistant !== "string") throw new CommandError(404, "no_such_run", "No run was started on this thread");
    return assistant;
  }

  async #respond(threadId: string, command: Command, headers: IncomingHttpHeaders, auth: RequestAuth | undefined) {
    const params = parseParams(InputRespondParamsSchema, command);
    const assistant = await this.#assistantOf(threadId, auth);
    const entries = "responses" in params ? params.responses : [params];
    const state = await this.#threads.state(threadId, {}, true, auth);
    const pending = new Set(state.tasks.flatMap((task) => task.interrupts.map((interrupt) => interrupt.id)));
    if (pending.size === 0) {
      throw new CommandError(409, "no_such_interrupt", "input.respond can only be used while the run is interrupted");
    }
    const unknown = entries.find((entry) => !pending.has(entry.interrupt_id));
    if (unknown) throw new CommandError(404, "no_such_interrupt", `No pending interrupt ${unknown.interrupt_id}`);
    const resume = Object.fromEntries(entries.map((entry) => [entry.interrupt_id, entry.response]));
    const { ordinal } = await this.#createRun(
      threadId,
      {
        assistant_id: assistant,
        command: { resume, update: params.update, goto: params.goto },
        config: params.config,
        metadata: params.metadata,
        multitask_strategy: "enqueue",
      },
      headers,
      auth,
    );
    return { result: {}, ordinal };
  }

  /** The tree of the thread's latest protocol run, or of `run_id` (one of its protocol runs). */
  async #tree(threadId: string, command: Command, auth: RequestAuth | undefined) {
    const { run_id: runId } = parseParams(AgentGetTreeParamsSchema, command);
    await this.#threads.get(threadId, auth);
    const index = runIndexId(threadId);
    const found = runId === undefined ? await this.#events.last(index) : await this.#findRun(index, runId);
    if (!found) throw new CommandError(404, "no_such_run", "No active run is bound to this thread.");
    const run = JSON.parse(found.data) as IndexedRun;
    return { ...(await runAgentTree(this.#events, { ...run, ordinal: found.id + 1 })) };
  }

  /** The entry of the thread's run list that names `runId`. */
  async #findRun(index: string, runId: string) {
    for (let after = -1; ; ) {
      const page = await this.#events.range(index, after, 500);
      const entry = page.find((item) => (JSON.parse(item.data) as IndexedRun).run_id === runId);
      if (entry || page.length < 500) return entry;
      after = page.at(-1)?.id ?? after;
    }
  }

  async #state(threadId: string, command: Command, auth: RequestAuth | undefined) {
    const { keys } = parseParams(StateGetParamsSchema, command);
    const state = await this.#threads.state(threadId, {}, false, auth);
    const values = state.values as Record<string, unknown> | null;
    const picked =
      keys && values ? Object.fromEntries(Object.entries(values).filter(([key]) => keys.includes(key))) : values;
    const checkpoint = state.checkpoint?.checkpoint_id
      ? { id: state.checkpoint.checkpoint_id, ns: state.checkpoint.checkpoint_ns }
      : undefined;
    return { values: picked ?? {}, ...(checkpoint && { checkpoint }) };
  }

  async #checkpoints(threadId: string, command: Command, auth: RequestAuth | undefined) {
    const { limit, before } = parseParams(ListCheckpointsParamsSchema, command);
    const history = await this.#threads.checkpoints(threadId, { limit: limit ?? 10, before }, auth);
    const checkpoints = history.flatMap((state) => {
      const id = state.checkpoint?.checkpoint_id;
      if (!id) return [];
      const step = typeof state.metadata.step === "number" ? state.metadata.step : 0;
      const writes = state.metadata.writes;
      const node = writes && typeof writes === "object" ? Object.keys(writes)[0] : undefined;
      return [
        {
          id,
          timestamp: state.created_at ?? "",
          step,
          ...(node && { node_name: node }),
          metadata: state.metadata,
        },
      ];
    });
    return { checkpoints };
  }

  async #fork(threadId: string, command: Command, headers: IncomingHttpHeaders, auth: RequestAuth | undefined) {
    const params = parseParams(StateForkParamsSchema, command);
    const assistant = await this.#assistantOf(threadId, auth);
    // A run from a checkpoint the thread does not have would start from nothing and fail.
    const selector = { checkpoint_id: params.checkpoint_id };
    const [forkPoint] = await this.#threads.checkpoints(threadId, { limit: 1, checkpoint: selector }, auth);
    if (!forkPoint) {
      throw new CommandError(404, "no_such_checkpoint", `Thread ${threadId} has no checkpoint ${params.checkpoint_id}`);
    }
    const { runId, ordinal } = await this.#createRun(
      threadId,
      {
        assistant_id: assistant,
        input: params.input ?? null,
        config: params.config,
        metadata: params.metadata,
        checkpoint_id: params.checkpoint_id,
        multitask_strategy: "enqueue",
      },
      headers,
      auth,
    );
    return { result: { run_id: runId, thread_id: threadId }, ordinal };
  }
}
