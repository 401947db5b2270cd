import { inferChannel, isPrefixMatch } from "@langchain/langgraph/stream";
import { END_EVENT, type LoggedEvent } from "../stream/event-log.ts";
import { toJsonValue } from "../threads/state.ts";

/**
 * Protocol events (the thread-centric streaming protocol of SDK ≥ 1.13): how a protocol run's
 * graph events are stored in its run event log, and how stored entries become the events clients
 * receive, with their per-thread sequence numbers.
 */

/** Name of the run log entries that hold one protocol event each. */
export const PROTOCOL_EVENT = "protocol";

/** An event as stored: everything but the envelope's sequence number and id. */
export interface StoredProtocolEvent {
  method: string;
  params: { namespace: string[]; timestamp: number; node?: string; data: unknown };
}

/** An event as sent. */
export interface ProtocolEvent extends StoredProtocolEvent {
  type: "event";
  event_id: string;
  seq: number;
}

/** What `graph.streamEvents(…, {version: "v3"})` yields. */
export interface GraphProtocolEvent {
  method: string;
  params: { namespace: string[]; timestamp?: number; node?: string; data: unknown };
}

/**
 * Sequence numbers are per thread: the n-th protocol run started on a thread numbers its events
 * n × SEQ_STRIDE + the event's position in its run log. Any replica computes the same number from
 * Redis alone, and numbers grow across the thread's runs, so `since` resumes exactly after the
 * last event a client saw. Gaps between numbers carry no meaning.
 */
export const SEQ_STRIDE = 1_000_000_000;

export const toSeq = (ordinal: number, position: number) => ordinal * SEQ_STRIDE + position;

/** The run (its ordinal, from 1) and the position in its log that a sequence number names. */
export const fromSeq = (seq: number) => ({ ordinal: Math.floor(seq / SEQ_STRIDE), position: seq % SEQ_STRIDE });

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const MESSAGE_TYPES: Record<string, string> = {
  human: "human",
  user: "human",
  ai: "ai",
  assistant: "ai",
  system: "system",
  tool: "tool",
  function: "function",
  remove: "remove",
};

/** Tool calls as `{id, name, args, type}`; string arguments parsed (the reference server's shape). */
function toolCalls(value: unknown): Record<string, unknown>[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((call) => {
    let args = call.args ?? {};
    if (typeof args === "string") {
      try {
        args = args.length === 0 ? {} : JSON.parse(args);
      } catch {
        // Kept as sent: the client shows what the model produced.
      }
    }
    return { ...(typeof call.id === "string" && { id: call.id }), name: call.name, args, type: "tool_call" };
  });
}

/** A state message in the protocol's concise shape, as the reference server sends it. */
function protocolMessage(message: Record<string, unknown>): Record<string, unknown> {
  const type = MESSAGE_TYPES[String(message.type)] ?? String(message.type);
  const out: Record<string, unknown> = { type, content: message.content ?? "" };
  if (typeof message.id === "string") out.id = message.id;
  if (typeof message.name === "string") out.name = message.name;
  if (isRecord(message.response_metadata) && Object.keys(message.response_metadata).length > 0) {
    out.response_metadata = message.response_metadata;
  }
  if ((type === "ai" || type === "human") && typeof message.example === "boolean") out.example = message.example;
  if (type === "tool") {
    if (typeof message.tool_call_id === "string") out.tool_call_id = message.tool_call_id;
    if (message.status === "success" || message.status === "error") out.status = message.status;
    if ("artifact" in message && message.artifact !== null) out.artifact = message.artifact;
  }
  if (type === "ai") {
    const calls = toolCalls(message.tool_calls);
    if (calls.length > 0) out.tool_calls = calls;
    if (Array.isArray(message.invalid_tool_calls) && message.invalid_tool_calls.length > 0) {
      out.invalid_tool_calls = message.invalid_tool_calls;
    }
  }
  return out;
}

const isStateMessage = (value: unknown): value is Record<string, unknown> =>
  isRecord(value) && typeof value.type === "string" && value.type in MESSAGE_TYPES;

/** State (values, updates) as the reference server sends it: concise messages, no `__interrupt__`. */
export function protocolState(value: unknown): unknown {
  if (Array.isArray(value))
    return value.map((item) => (isStateMessage(item) ? protocolMessage(item) : protocolState(item)));
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === "__interrupt__") continue;
    out[key] =
      key === "messages" && Array.isArray(item)
        ? item.map((message) => (isStateMessage(message) ? protocolMessage(message) : message))
        : protocolState(item);
  }
  return out;
}

/** `[{id, value}]` interrupts → `input.requested` payloads. */
const inputRequests = (value: unknown): { interrupt_id: string; payload: unknown }[] =>
  (Array.isArray(value) ? value : []).flatMap((entry) =>
    isRecord(entry) && typeof entry.id === "string" ? [{ interrupt_id: entry.id, payload: entry.value ?? null }] : [],
  );

/**
 * Turns one protocol run's graph events into the events stored in its log, as the reference
 * server's protocol session does: the root lifecycle is the server's (`running` first, then how
 * the graph stopped), interrupts become `input.requested` (once each), state becomes JSON.
 */
export class ProtocolEventMapper {
  readonly #graphName: string;
  readonly #requested = new Set<string>();

  constructor(graphName: string) {
    this.#graphName = graphName;
  }

  #event(method: string, namespace: string[], data: unknown, node?: string): StoredProtocolEvent {
    return { method, params: { namespace, timestamp: Date.now(), ...(node !== undefined && { node }), data } };
  }

  /** The root `lifecycle: running` that opens a run. */
  started(): StoredProtocolEvent {
    return this.#event("lifecycle", [], { event: "running", graph_name: this.#graphName });
  }

  /** The root lifecycle of a graph that returned: interrupted when it asked for input. */
  finished(interrupted: boolean): StoredProtocolEvent {
    const event = interrupted || this.#requested.size > 0 ? "interrupted" : "completed";
    return this.#event("lifecycle", [], { event, graph_name: this.#graphName });
  }

  #requests(namespace: string[], interrupts: unknown): StoredProtocolEvent[] {
    const events: StoredProtocolEvent[] = [];
    for (const request of inputRequests(interrupts)) {
      if (this.#requested.has(request.interrupt_id)) continue;
      this.#requested.add(request.interrupt_id);
      events.push(this.#event("input.requested", namespace, toJsonValue(request)));
    }
    return events;
  }

  map(event: GraphProtocolEvent): StoredProtocolEvent[] {
    const { method, params } = event;
    const { namespace } = params;
    const stored = (data: unknown, node?: string): StoredProtocolEvent => ({
      method,
      params: { namespace, timestamp: params.timestamp ?? Date.now(), ...(node !== undefined && { node }), data },
    });
    switch (method) {
      case "lifecycle":
        return namespace.length === 0 ? [] : [stored(toJsonValue(params.data))];
      case "values": {
        const values = toJsonValue(params.data);
        const requests = this.#requests(namespace, isRecord(values) ? values.__interrupt__ : undefined);
        const state = protocolState(values);
        const empty = isRecord(state) && Object.keys(state).length === 0;
        return empty ? requests : [...requests, stored(state)];
      }
      case "updates": {
        const update = params.data as { node?: string; values?: unknown };
        if (update.node === "__interrupt__") return this.#requests(namespace, toJsonValue(update.values));
        return [stored(protocolState(toJsonValue(update.values)), update.node)];
      }
      default:
        // Only updates name their node: the reference sends messages, tools, tasks, … without it.
        return [stored(toJsonValue(params.data))];
    }
  }
}

/** Run status in a log's closing entry → the root lifecycle event it ends the run with. */
const TERMINAL: Record<string, string> = { error: "failed", interrupted: "interrupted", deleted: "interrupted" };

/** A protocol event, and its JSON text as sent. */
export interface SentEvent {
  event: ProtocolEvent;
  json: string;
}

/**
 * One entry of a protocol run's log as sent: its protocol event, the terminal lifecycle of a run
 * that failed or was cancelled (a run that returned logged its own), or nothing. A stored event's
 * text is sent as stored, behind the envelope, not serialised again (it is parsed for filters).
 */
export function toProtocolEvent(ordinal: number, graphName: string, entry: LoggedEvent): SentEvent | undefined {
  const seq = toSeq(ordinal, entry.id);
  const envelope = { type: "event" as const, event_id: String(seq), seq };
  if (entry.event === PROTOCOL_EVENT) {
    const event = { ...envelope, ...(JSON.parse(entry.data) as StoredProtocolEvent) };
    return { event, json: `{"type":"event","event_id":"${seq}","seq":${seq},${entry.data.slice(1)}` };
  }
  if (entry.event !== END_EVENT) return undefined;
  const outcome = JSON.parse(entry.data) as { status: string; error?: { message?: string } };
  const terminal = TERMINAL[outcome.status];
  if (!terminal) return undefined;
  const data = {
    event: terminal,
    graph_name: graphName,
    ...(outcome.error?.message !== undefined && { error: outcome.error.message }),
  };
  const event: ProtocolEvent = {
    ...envelope,
    method: "lifecycle",
    params: { namespace: [], timestamp: Date.now(), data },
  };
  return { event, json: JSON.stringify(event) };
}

/** What one event stream receives: channels, optionally namespace prefixes (with a depth below them), after `since`. */
export interface EventFilter {
  channels: ReadonlySet<string>;
  namespaces?: string[][];
  depth?: number;
  since?: number;
}

/** The reference server's (and the SDK's) matching: channel, then namespace prefix and depth. */
export function matchesFilter(filter: EventFilter, event: ProtocolEvent): boolean {
  if (filter.since !== undefined && event.seq <= filter.since) return false;
  const channel = inferChannel(event as never);
  if (channel === undefined) return false;
  if (!filter.channels.has(channel) && !(channel.startsWith("custom:") && filter.channels.has("custom"))) return false;
  if (!filter.namespaces || filter.namespaces.length === 0) return true;
  return filter.namespaces.some(
    (prefix) =>
      isPrefixMatch(event.params.namespace, prefix) &&
      (filter.depth === undefined || event.params.namespace.length - prefix.length <= filter.depth),
  );
}
