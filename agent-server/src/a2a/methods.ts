import { HttpError } from "@agentplane/common";
import type { Response } from "express";
import { validate as isUuid } from "uuid";
import type { AuthEvent, RequestAuth } from "../custom-auth/authorize.ts";
import type { Run } from "../runs/schemas.ts";
import type { RunService } from "../runs/service.ts";
import type { RunOutcome } from "../runs/worker/settle.ts";
import type { Assistant } from "../storage/types.ts";
import { openSse, writeSseHeartbeat } from "../stream/sse.ts";
import type { ThreadService } from "../threads/service.ts";
import { resultArtifact, resumeValue, runInput, taskState, toTask } from "./mapping.ts";
import {
  type A2ATask,
  JSONRPC_ERRORS,
  JsonRpcError,
  parseParams,
  type RequestId,
  type SendParams,
  type StreamEvent,
  success,
  TaskIdParamsSchema,
} from "./protocol.ts";

/** Keep-alive comments on `message/stream` while a run is silent. */
const HEARTBEAT_MS = 5000;

/**
 * The A2A methods of one assistant, over the run service (task = run, contextId = thread), in v0.3
 * shapes; `routes.ts` parses and presents the v1.0 ones through `v1.ts`.
 */
export class A2AMethods {
  readonly #threads: ThreadService;
  readonly #runs: RunService;
  readonly #assistant: Assistant;
  /** The caller under custom auth: tasks on threads it may not see are unknown. */
  readonly #auth: RequestAuth | undefined;

  constructor(threads: ThreadService, runs: RunService, assistant: Assistant, auth?: RequestAuth) {
    this.#threads = threads;
    this.#runs = runs;
    this.#assistant = assistant;
    this.#auth = auth;
  }

  async #run(taskId: string, event: AuthEvent = "threads:read"): Promise<Run> {
    try {
      const run = await this.#runs.get(undefined, taskId, this.#auth, event);
      if (run.assistant_id === this.#assistant.assistant_id) return run;
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
    }
    throw new JsonRpcError(JSONRPC_ERRORS.taskNotFound, `Task ${taskId} not found`);
  }

  /** The task of a run from its final outcome (or its record and thread while it is going). */
  async #task(run: Run, outcome?: RunOutcome): Promise<A2ATask> {
    const thread = await this.#threads.find(run.thread_id);
    const status = outcome?.status ?? (await this.#runs.find(run.run_id))?.status ?? "deleted";
    const state = taskState(status, thread);
    const question = state === "input-required" ? Object.values(thread?.interrupts ?? {})[0]?.[0]?.value : undefined;
    return toTask(run, state, outcome?.values ?? thread?.values ?? null, { error: outcome?.error?.message, question });
  }

  /** Creates the run a message asks for: new input on the context's thread, or the answer to an `input-required` task. */
  async #start(params: SendParams): Promise<Run> {
    const { message } = params;
    const assistantId = this.#assistant.assistant_id;
    if (message.taskId) {
      const previous = await this.#run(message.taskId);
      if (message.contextId && message.contextId !== previous.thread_id) {
        throw new JsonRpcError(JSONRPC_ERRORS.invalidParams, "contextId does not match the task's context");
      }
      const thread = await this.#threads.find(previous.thread_id);
      if (thread?.status !== "interrupted") {
        throw new JsonRpcError(JSONRPC_ERRORS.invalidParams, `Task ${message.taskId} is not waiting for input`);
      }
      return this.#runs.create(
        previous.thread_id,
        { assistant_id: assistantId, command: { resume: resumeValue(message) } },
        {},
        { auth: this.#auth },
      );
    }
    if (message.contextId !== undefined && !isUuid(message.contextId)) {
      throw new JsonRpcError(JSONRPC_ERRORS.invalidParams, "contextId must be a UUID (it is the thread id)");
    }
    return this.#runs.create(
      message.contextId,
      {
        assistant_id: assistantId,
        input: runInput(message),
        metadata: { a2a_message_id: message.messageId },
        ...(message.contextId === undefined
          ? { on_completion: "keep" as const }
          : { if_not_exists: "create" as const }),
      },
      {},
      { auth: this.#auth },
    );
  }

  async send(params: SendParams, signal: AbortSignal): Promise<A2ATask> {
    const run = await this.#start(params);
    if (params.configuration?.blocking === false) return this.#task(run);
    return this.#task(run, await this.#runs.outcome(run, signal, HEARTBEAT_MS));
  }

  async get(params: unknown): Promise<A2ATask> {
    const { id } = parseParams(TaskIdParamsSchema, params);
    return this.#task(await this.#run(id));
  }

  async cancel(params: unknown): Promise<A2ATask> {
    const { id } = parseParams(TaskIdParamsSchema, params);
    const run = await this.#run(id, "threads:update");
    const current = await this.#runs.find(run.run_id);
    if (current?.status !== "pending" && current?.status !== "running") {
      throw new JsonRpcError(JSONRPC_ERRORS.taskNotCancelable, `Task ${id} is already finished`);
    }
    await this.#runs.cancel(current, "interrupt");
    return { ...(await this.#task(run)), status: { state: "canceled", timestamp: new Date().toISOString() } };
  }

  /**
   * `message/stream`: the task, `working`, then the result artifact and the final status, as SSE
   * JSON-RPC responses, each event shaped by `present` (the protocol version's stream response).
   */
  async stream(
    id: RequestId,
    params: SendParams,
    res: Response,
    signal: AbortSignal,
    present: (event: StreamEvent) => unknown,
  ): Promise<void> {
    const run = await this.#start(params);
    openSse(res);
    const send = (event: StreamEvent) => res.write(`data: ${JSON.stringify(success(id, present(event)))}\n\n`);
    const base = { taskId: run.run_id, contextId: run.thread_id };
    send(toTask(run, "submitted", null));
    send({
      kind: "status-update",
      ...base,
      status: { state: "working", timestamp: new Date().toISOString() },
      final: false,
    });
    const outcome = await this.#runs.outcome(run, signal, HEARTBEAT_MS, () => writeSseHeartbeat(res));
    if (outcome) {
      const task = await this.#task(run, outcome);
      if (task.artifacts)
        send({
          kind: "artifact-update",
          ...base,
          artifact: resultArtifact(run.run_id, outcome.values),
          lastChunk: true,
        });
      send({ kind: "status-update", ...base, status: task.status, final: true });
    }
    res.end();
  }
}
