import type { Run, RunStatus } from "../runs/schemas.ts";
import type { JsonObject, Thread } from "../storage/types.ts";
import type { A2AMessage, A2ATask, TaskState } from "./protocol.ts";

/** Pure conversions between A2A messages/tasks and agent-server runs/threads. */

/** Text parts become one user message of `messages`; data parts are merged into the input. */
export function runInput(message: A2AMessage): JsonObject {
  const input: JsonObject = {};
  const text = message.parts
    .filter((part) => part.kind === "text")
    .map((part) => part.text)
    .join("\n");
  for (const part of message.parts) if (part.kind === "data") Object.assign(input, part.data);
  if (text) input.messages = [{ role: "user", content: text }];
  return input;
}

/** Resuming an `input-required` task: a data part's `resume` value, else the text. */
export function resumeValue(message: A2AMessage): unknown {
  for (const part of message.parts) if (part.kind === "data" && "resume" in part.data) return part.data.resume;
  return message.parts
    .filter((part) => part.kind === "text")
    .map((part) => part.text)
    .join("\n");
}

export function taskState(status: RunStatus | "deleted", thread: Thread | undefined): TaskState {
  switch (status) {
    case "pending":
      return "submitted";
    case "running":
      return "working";
    case "success":
      return thread?.status === "interrupted" ? "input-required" : "completed";
    case "interrupted":
    case "deleted":
      return "canceled";
    default:
      return "failed";
  }
}

/** Text of the last message of a `messages` state key (serialised LangChain messages or plain dicts). */
function lastMessageText(values: JsonObject): string | undefined {
  const messages = values.messages;
  if (!Array.isArray(messages) || messages.length === 0) return undefined;
  const last = messages.at(-1) as JsonObject;
  const content = last.content ?? (last.kwargs as JsonObject | undefined)?.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => (typeof block === "string" ? block : String((block as JsonObject).text ?? "")))
      .join("");
  }
  return undefined;
}

/** The graph's output as an artifact: the last message's text when there is one, else the values. */
export function resultArtifact(runId: string, values: unknown): NonNullable<A2ATask["artifacts"]>[number] {
  const object = values && typeof values === "object" && !Array.isArray(values) ? (values as JsonObject) : undefined;
  const text = object && lastMessageText(object);
  return {
    artifactId: `${runId}-result`,
    name: "result",
    parts: text === undefined ? [{ kind: "data", data: values ?? null }] : [{ kind: "text", text }],
  };
}

/** The A2A task of a run: contextId is the thread, the task id the run. */
export function toTask(
  run: Run,
  state: TaskState,
  values: unknown,
  extra: { error?: string; question?: unknown } = {},
): A2ATask {
  const task: A2ATask = {
    kind: "task",
    id: run.run_id,
    contextId: run.thread_id,
    status: { state, timestamp: new Date().toISOString() },
    metadata: { assistant_id: run.assistant_id },
  };
  const note = extra.error ?? (extra.question === undefined ? undefined : JSON.stringify(extra.question));
  if (note !== undefined) {
    task.status.message = {
      kind: "message",
      messageId: `${run.run_id}-status`,
      role: "agent",
      parts: [{ kind: "text", text: note }],
      contextId: run.thread_id,
      taskId: run.run_id,
    };
  }
  if (state === "completed" || state === "input-required") task.artifacts = [resultArtifact(run.run_id, values)];
  return task;
}
