import type { ServerContext } from "../../context.ts";
import type { JsonObject, Thread, ThreadStatus } from "../../storage/types.ts";
import { END_EVENT } from "../../stream/event-log.ts";
import { type CheckpointValues, type JsonParts, valuesParsedWhenRead } from "../../stream/references.ts";
import type { RunEventWriter } from "../../stream/writer.ts";
import type { ThreadService } from "../../threads/service.ts";
import { toJsonValue } from "../../threads/state.ts";
import type { RunBackend } from "../queue/backend.ts";
import type { ExpiredRun } from "../queue/store.ts";
import type { Run, RunStatus } from "../schemas.ts";
import { type ExecutionResult, interruptsOf, type RunError } from "./execute.ts";
import { defaultWebhookOptions, sendWebhook } from "./webhook.ts";

/** How long a finished run's events stay readable (joins, resumes, `…/wait` of late clients). */
export const FINISHED_STREAM_TTL_SECONDS = 3600;

/** The last entry of a run's event log: what `…/wait` and `…/join` answer. */
export interface RunOutcome {
  status: RunStatus | "deleted";
  values: unknown;
  /** `values` as JSON, when they were read as such (then `values` parses it when read). */
  valuesJson?: JsonParts | string;
  error?: RunError;
}

export interface RunEnd {
  result: ExecutionResult;
  attempt: number;
  /** This attempt's start (ISO), for the webhook. */
  startedAt: string;
  /** The thread's record as the execution began: usually still current, so settling need not read it again. */
  thread?: Thread;
  /** Reads values sent as a reference (`outputAt`) as JSON text. */
  checkpointValues?: CheckpointValues;
}

/** `…/wait` body of a finished run, as JSON. */
export const outcomeJson = (outcome: RunOutcome): string | JsonParts =>
  outcome.error
    ? JSON.stringify({ __error__: outcome.error })
    : (outcome.valuesJson ?? JSON.stringify(outcome.values ?? null));

function runStatus(result: ExecutionResult): RunStatus | "deleted" {
  if (result.kind === "failed") return "error";
  if (result.kind === "cancelled") return result.reason === "rollback" ? "deleted" : "interrupted";
  return "success";
}

/** The thread's status after the run, unless more runs are in flight (the store then keeps it `busy`). */
function threadStatus(result: ExecutionResult): ThreadStatus {
  if (result.kind === "failed") return "error";
  if (result.kind === "done" && result.next.length > 0) return "interrupted";
  return "idle";
}

/**
 * Removes a rolled-back run's effect on the thread: every checkpoint and pending write the run
 * stored goes, so the thread's head is the checkpoint before the run. Returns that state (values
 * null when the run wrote the thread's only checkpoints), with its pending nodes and interrupts.
 */
async function rollbackCheckpoints(ctx: ServerContext, run: Run): Promise<ExecutionResult> {
  await ctx.storage.checkpointer.deleteRun(run.thread_id, run.run_id);
  const graphId = String((run.kwargs.config.configurable as JsonObject | undefined)?.graph_id ?? "");
  const graph = await ctx.graphs.get(graphId, run.kwargs.config);
  const state = await graph.getState({ configurable: { thread_id: run.thread_id, checkpoint_ns: "" } });
  return {
    kind: "done",
    values: state.createdAt === undefined ? null : toJsonValue(state.values),
    next: [...state.next],
    interrupts: interruptsOf(state.tasks),
  };
}

async function publishOutcome(backend: RunBackend, runId: string, outcome: RunOutcome): Promise<void> {
  await backend.events.append(
    runId,
    [{ event: END_EVENT, data: JSON.stringify(outcome) }],
    FINISHED_STREAM_TTL_SECONDS,
  );
}

/**
 * After an execution: error event, thread status and values, run status (which frees the
 * thread for its next run), the closing log entry, the webhook and the temporary thread's removal.
 * Returns the outcome, or undefined when the run's lease was lost (another worker owns it now).
 */
export async function settleRun(
  ctx: ServerContext,
  backend: RunBackend,
  threads: ThreadService,
  run: Run,
  end: RunEnd,
  writer: RunEventWriter,
): Promise<RunOutcome | undefined> {
  const { result } = end;
  const status = runStatus(result);
  const error = result.kind === "failed" ? result.error : undefined;
  if (error) writer.push("error", error);
  const rolledBack = status === "deleted";
  await writer.flush().catch((err) => ctx.logger.error({ err, run_id: run.run_id }, "storing run events failed"));
  // Another worker took the run over (its log refused this attempt's events): the new owner settles it.
  if (writer.leaseLost) return undefined;
  // The checkpoint the run's final values were streamed as: the thread keeps the reference.
  const outputAt = result.kind === "done" && !rolledBack ? result.outputAt : undefined;
  // Their JSON as stored, so the graph's objects (a whole conversation) are not converted again.
  const outputJson = outputAt && (await end.checkpointValues?.jsonParts(outputAt));
  let values = outputJson ? undefined : result.values;
  if (!run.kwargs.temporary) {
    // After a rollback the thread is what its earlier state says (values, pending interrupts).
    const settled = rolledBack ? await rollbackCheckpoints(ctx, run) : result;
    if (rolledBack) values = settled.values;
    const update = {
      status: threadStatus(settled),
      ...((rolledBack || (values !== undefined && values !== null)) && { values: values as JsonObject | null }),
      ...(outputAt && { values_at: outputAt }),
      ...(outputJson && { values_json: outputJson }),
      interrupts: settled.kind === "done" ? settled.interrupts : {},
      state_updated: true,
    };
    // Fenced: a worker whose lease another took over writes nothing (the new owner settles the run).
    const fence = { runId: run.run_id, attempt: end.attempt };
    if ((await threads.settleRun(run.thread_id, update, fence, end.thread)) === "lease-lost") return undefined;
  }
  // What `…/wait` answers: the run's last `values` event (an interrupt's `{__interrupt__}`), not the thread's values.
  const output = outputJson
    ? undefined
    : result.kind === "done" && !rolledBack && result.output !== undefined
      ? result.output
      : values;
  const outcome: RunOutcome = outputJson
    ? valuesParsedWhenRead<RunOutcome>({ status, values: undefined, valuesJson: outputJson }, outputJson)
    : { status, values: output ?? null, ...(error && { error }) };
  // The log's readers get the values from the checkpoint they were streamed as (`stream/references.ts`).
  const closing = {
    data: JSON.stringify(outputAt ? { status, values_at: outputAt } : outcome),
    keepSeconds: FINISHED_STREAM_TTL_SECONDS,
    temporary: run.kwargs.temporary,
  };
  if (!(await backend.store.finish(run.run_id, end.attempt, status, closing))) return undefined;
  if (run.kwargs.webhook && status !== "deleted") {
    void sendWebhook(
      run.kwargs.webhook,
      {
        ...run,
        status,
        updated_at: new Date().toISOString(),
        run_started_at: end.startedAt,
        run_ended_at: new Date().toISOString(),
        values: outputJson ? outcome.values : (values ?? null),
        ...(error && { error: error.message }),
      },
      ctx.logger,
      { ...defaultWebhookOptions, policy: ctx.config.webhookPolicy },
    );
  }
  if (run.kwargs.temporary) await threads.removeTemporary(run.thread_id);
  return outcome;
}

/**
 * A run whose worker died and which will not be retried: its thread and waiters learn the
 * outcome. A run that was being rolled back goes with every checkpoint it wrote.
 */
export async function settleAbandoned(
  ctx: ServerContext,
  backend: RunBackend,
  threads: ThreadService,
  { runId, outcome }: Pick<ExpiredRun, "runId" | "outcome">,
  maxAttempts: number,
): Promise<void> {
  const run = await backend.store.get(runId);
  if (!run || outcome === "pending") return;
  const error: RunError | undefined =
    outcome === "error"
      ? {
          error: "RunAttemptsExceeded",
          message: `Run ${runId} was abandoned ${maxAttempts} times: its worker stopped (crashed or lost Redis) before finishing`,
        }
      : undefined;
  if (error) await backend.events.append(runId, [{ event: "error", data: JSON.stringify(error) }]);
  if (outcome === "deleted") await ctx.storage.checkpointer.deleteRun(run.thread_id, runId);
  if (!run.kwargs.temporary) await threads.runsChanged(run.thread_id, error ? "error" : "idle");
  await publishOutcome(backend, runId, { status: outcome, values: null, ...(error && { error }) });
  if (outcome === "deleted") await backend.store.delete(runId);
  if (run.kwargs.temporary) await threads.removeTemporary(run.thread_id);
}

/** A pending run cancelled before any worker took it: close its stream so waiters return. */
export async function settleCancelledPending(backend: RunBackend, runId: string, deleted: boolean): Promise<void> {
  await publishOutcome(backend, runId, { status: deleted ? "deleted" : "interrupted", values: null });
}
