import { randomUUID } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import type { Socket } from "node:net";
import { HttpError, type Logger, toValidationIssues } from "@agentplane/common";
import { type RawData, WebSocket } from "ws";
import type { RequestAuth } from "../custom-auth/authorize.ts";
import { jsonLimitProblem } from "../http/json-limits.ts";
import type { RunService } from "../runs/service.ts";
import type { RunEventLog } from "../stream/event-log.ts";
import type { ThreadService } from "../threads/service.ts";
import { type EventFilter, matchesFilter, type ProtocolEvent, toSeq } from "./events.ts";
import { type Command, CommandSchema, SubscribeParamsSchema, UnsubscribeParamsSchema } from "./schemas.ts";
import { CommandError, type CommandResponse, parseParams, runIndexId, type ThreadProtocolService } from "./service.ts";
import { protocolEvents } from "./stream.ts";

/**
 * The thread-centric protocol over a WebSocket at `/threads/{id}/stream/events` (SDK ≥ 1.13,
 * `client.threads.stream(…, {transport: "websocket"})`): commands and their responses, and the
 * events of the socket's subscriptions, on one connection.
 */

export interface ProtocolSocketOptions {
  /** Ping interval; a peer silent for `PONG_TIMEOUT_HEARTBEATS` intervals is dropped. */
  heartbeatMs: number;
  /** Bytes a socket may have unsent before the next frame waits for the client to take them. */
  bufferLimit: number;
  /** A client that takes nothing for this long while the buffer is full is disconnected. */
  stallMs: number;
  /** Largest command accepted, in bytes (the HTTP body limit). */
  maxPayload: number;
  logger: Logger;
}

/** Close codes (RFC 6455); the SDK reconnects after any of them and subscribes again. */
export const CLOSE = {
  goingAway: 1001,
  policy: 1008,
  internal: 1011,
} as const;

/** Commands one socket may have in progress: a client that sends more without reading answers is cut off. */
const MAX_IN_FLIGHT = 32;
const PONG_TIMEOUT_HEARTBEATS = 3;

interface Pump {
  controller: AbortController;
  /** The send in progress, if any. */
  sending?: Promise<boolean>;
}

interface Subscription {
  filter: EventFilter;
  /** Events up to this sequence number are not (or no longer) this subscription's to receive. */
  after: number;
}

/**
 * One client's socket on one thread. Its events come from a single reader ("pump") of the
 * thread's protocol events in Redis, in sequence order: an event is sent once, when it matches
 * any subscription that has not had it yet, however many match (the SDK fans it out to its
 * subscriptions by filter). A subscription that wants events the pump has passed (`since`, or
 * the current run from its start) restarts the pump there; the earlier subscriptions, already
 * served up to that point, are not sent those events again.
 */
export class ProtocolSocket {
  readonly #ws: WebSocket;
  readonly #threadId: string;
  readonly #headers: IncomingHttpHeaders;
  readonly #auth: RequestAuth | undefined;
  readonly #deps: SocketDeps;
  readonly #subscriptions = new Map<string, Subscription>();
  #pump: Pump | undefined;
  /** Sequence number of the last event the pump passed (sent or not wanted). */
  #position = -1;
  /** Subscription changes, one at a time: each may stop and restart the pump. */
  #changes: Promise<unknown> = Promise.resolve();
  #inFlight = 0;
  /**
   * Frames waiting for the client to take the full buffer: pings queue behind the events
   * meanwhile, so the stall limit judges the client, not missing pongs.
   */
  #waiting = 0;
  /**
   * Pings since the client's last sign of life: a pong, or the connection taking a frame. Counted
   * in pings, not milliseconds, so a server whose own event loop ran late (its timers run before
   * it reads the pongs that came meanwhile) does not blame the client.
   */
  #silentPings = 0;
  /** A sign of life, as a bound callback: passed to every send, it costs no closure per frame. */
  readonly #heard = (): void => {
    this.#silentPings = 0;
  };
  /** The connection under the socket, corked while the pump sends what one read of the log gave. */
  readonly #connection: Socket;
  #corked = false;

  constructor(
    ws: WebSocket,
    connection: Socket,
    threadId: string,
    headers: IncomingHttpHeaders,
    auth: RequestAuth | undefined,
    deps: SocketDeps,
  ) {
    this.#ws = ws;
    this.#connection = connection;
    this.#threadId = threadId;
    this.#headers = headers;
    this.#auth = auth;
    this.#deps = deps;
    ws.on("message", (data) => this.#receive(data));
    ws.on("pong", this.#heard);
    // A frame over maxPayload, bad UTF-8 or a protocol violation: ws closes the socket with the
    // matching code (1009, 1007, 1002) and then emits this, which would crash the process unheard.
    ws.on("error", (error) => {
      this.#deps.logger.info({ err: error, thread_id: threadId }, "protocol socket closed on a bad frame");
    });
    ws.on("close", () => {
      this.#subscriptions.clear();
      this.#pump?.controller.abort();
    });
  }

  /**
   * Pings an open socket; a closing one is left to its close handshake (ws ends it after 30 s).
   * A client that stopped reading answers no pings, but while the connection still takes its
   * frames (the kernel's buffers filling) it is not silent, and once frames wait it is judged by
   * the stall limit: either way it gets the 1008 close, not a drop.
   */
  ping(): void {
    if (this.#ws.readyState !== WebSocket.OPEN) return;
    if (this.#waiting === 0 && this.#silentPings >= PONG_TIMEOUT_HEARTBEATS) {
      this.#ws.terminate();
      return;
    }
    this.#silentPings++;
    this.#ws.ping();
  }

  close(code: number, reason: string): void {
    if (this.#ws.readyState === WebSocket.OPEN || this.#ws.readyState === WebSocket.CONNECTING) {
      this.#ws.close(code, reason);
    }
  }

  #receive(data: RawData): void {
    if (this.#inFlight >= MAX_IN_FLIGHT) {
      this.close(CLOSE.policy, `more than ${MAX_IN_FLIGHT} commands in flight`);
      return;
    }
    this.#inFlight++;
    this.#handle(data)
      .catch((error: unknown) => {
        this.#deps.logger.error({ err: error, thread_id: this.#threadId }, "protocol command failed");
        this.close(CLOSE.internal, "internal error");
      })
      .finally(() => {
        this.#inFlight--;
      });
  }

  async #handle(data: RawData): Promise<void> {
    // Text or binary frames alike: with ws's default binaryType, a whole message as one Buffer.
    const bytes = data as Buffer;
    // The same depth and width limits as HTTP bodies, before JSON.parse and zod recurse into it.
    const problem = jsonLimitProblem(bytes);
    if (problem) {
      const detail = [{ loc: ["body"], msg: problem, type: "json_too_complex" }];
      await this.#send({ type: "error", id: null, error: "invalid_argument", message: problem, detail });
      return;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(bytes.toString("utf8"));
    } catch {
      await this.#send({ type: "error", id: null, error: "invalid_argument", message: "A command must be JSON." });
      return;
    }
    const parsed = CommandSchema.safeParse(payload);
    if (!parsed.success) {
      const id = (payload as { id?: unknown } | null)?.id;
      const detail = toValidationIssues(parsed.error, "body", payload);
      await this.#send({
        type: "error",
        id: typeof id === "number" && Number.isInteger(id) ? id : null,
        error: "invalid_argument",
        message: detail.map((issue) => `${issue.loc.slice(1).join(".") || "command"}: ${issue.msg}`).join("; "),
        detail,
      });
      return;
    }
    const command = parsed.data;
    if (command.method === "subscription.subscribe" || command.method === "subscription.unsubscribe") {
      await this.#subscriptionCommand(command);
      return;
    }
    const { body } = await this.#deps.protocol.handle(this.#threadId, command, this.#headers, this.#auth);
    await this.#send(body);
  }

  async #subscriptionCommand(command: Command): Promise<void> {
    try {
      if (command.method === "subscription.subscribe") await this.#subscribe(command);
      else await this.#unsubscribe(command);
    } catch (error) {
      const failure =
        error instanceof CommandError
          ? error
          : error instanceof HttpError && error.status < 500
            ? new CommandError(error.status, "no_such_run", String(error.detail))
            : undefined;
      if (!failure) throw error;
      await this.#send({
        type: "error",
        id: command.id,
        error: failure.code,
        message: failure.message,
        ...(failure.detail && { detail: failure.detail }),
      });
    }
  }

  /** Runs `change` after the previous subscription change finished. */
  #serialised<T>(change: () => Promise<T>): Promise<T> {
    const next = this.#changes.then(change);
    this.#changes = next.catch(() => undefined);
    return next;
  }

  async #subscribe(command: Command): Promise<void> {
    const params = parseParams(SubscribeParamsSchema, command);
    // Under custom auth, only the user's own thread (the socket itself was only authenticated).
    if (this.#auth) await this.#deps.threads.get(this.#threadId, this.#auth);
    await this.#serialised(async () => {
      // Without `since`, the thread's current run from its start, as the reference replays its run buffer.
      const after = params.since ?? (await this.#currentRunStart());
      if (this.#pump && after < this.#position) {
        await this.#stopPump();
        for (const subscription of this.#subscriptions.values()) {
          subscription.after = Math.max(subscription.after, this.#position);
        }
      }
      const id = randomUUID();
      const filter = { channels: new Set(params.channels), namespaces: params.namespaces, depth: params.depth };
      this.#subscriptions.set(id, { filter, after });
      await this.#send({
        type: "success",
        id: command.id,
        result: { subscription_id: id },
        meta: { thread_id: this.#threadId },
      });
      if (!this.#pump) this.#startPump(Math.min(...[...this.#subscriptions.values()].map((sub) => sub.after)));
    });
  }

  async #unsubscribe(command: Command): Promise<void> {
    const { subscription_id: id } = parseParams(UnsubscribeParamsSchema, command);
    await this.#serialised(async () => {
      if (!this.#subscriptions.delete(id)) {
        throw new CommandError(404, "no_such_subscription", `Unknown subscription: ${id}`);
      }
      if (this.#subscriptions.size === 0) await this.#stopPump();
      await this.#send({ type: "success", id: command.id, result: {}, meta: { thread_id: this.#threadId } });
    });
  }

  /** The sequence number just before the thread's latest protocol run (-1: none yet, so all to come). */
  async #currentRunStart(): Promise<number> {
    const last = await this.#deps.events.last(runIndexId(this.#threadId));
    return last ? toSeq(last.id + 1, 0) - 1 : -1;
  }

  #startPump(after: number): void {
    const pump: Pump = { controller: new AbortController() };
    this.#position = after;
    this.#runPump(pump, after).catch((error: unknown) => {
      if (pump.controller.signal.aborted) return;
      this.#deps.logger.error({ err: error, thread_id: this.#threadId }, "streaming protocol events failed");
      this.close(CLOSE.internal, "event stream failed");
    });
    this.#pump = pump;
  }

  /**
   * Stops the pump once the event it is sending went out, so `#position` is final. Its reader
   * is not awaited: it may be waiting for an append and ends on its own within a heartbeat.
   */
  async #stopPump(): Promise<void> {
    const pump = this.#pump;
    this.#pump = undefined;
    pump?.controller.abort();
    await pump?.sending;
  }

  async #runPump(pump: Pump, after: number): Promise<void> {
    const { runs, events, heartbeatMs } = this.#deps;
    const { signal } = pump.controller;
    for await (const item of protocolEvents(runs, events, this.#threadId, after, { signal, heartbeatMs })) {
      // Idle sockets are kept alive by pings (see `ProtocolSockets`), not by the log's heartbeats.
      if ("heartbeat" in item) continue;
      if (signal.aborted) return;
      if ("dropped" in item) {
        if (!(await this.#send({ type: "error", id: null, error: "events_dropped", message: item.dropped }))) return;
        continue;
      }
      if (this.#wanted(item.event)) {
        this.#corkUntilNextTick();
        pump.sending = this.#sendText(item.json);
        if (!(await pump.sending)) return;
      }
      // Also when the pump was stopped during the send: the event went out.
      this.#position = item.event.seq;
    }
  }

  /**
   * The events of one page of the log arrive in one run of microtasks: corked, their frames go
   * out in one write instead of one system call each.
   */
  #corkUntilNextTick(): void {
    if (this.#corked) return;
    this.#corked = true;
    this.#connection.cork();
    process.nextTick(() => {
      this.#corked = false;
      this.#connection.uncork();
    });
  }

  #wanted(event: ProtocolEvent): boolean {
    for (const { filter, after } of this.#subscriptions.values()) {
      if (event.seq > after && matchesFilter(filter, event)) return true;
    }
    return false;
  }

  /**
   * Sends one frame. Past `bufferLimit` unsent bytes it waits until the frame is written out, so
   * the pump stops reading Redis; a client that takes nothing for `stallMs` is disconnected
   * with the reason. False once the socket is closing.
   */
  #send(message: CommandResponse | Record<string, unknown>): Promise<boolean> {
    return this.#sendText(JSON.stringify(message));
  }

  /** `#send` of a frame already serialised (events: as read from the log). */
  async #sendText(text: string): Promise<boolean> {
    const ws = this.#ws;
    if (ws.readyState !== WebSocket.OPEN) return false;
    if (ws.bufferedAmount + text.length <= this.#deps.bufferLimit) {
      ws.send(text, this.#heard);
      return true;
    }
    const { stallMs, bufferLimit } = this.#deps;
    this.#waiting++;
    return new Promise((resolve) => {
      let settled = false;
      const done = (sent: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        this.#waiting--;
        if (sent) this.#heard();
        resolve(sent);
      };
      const timer = setTimeout(() => {
        const reason = `slow consumer: over ${bufferLimit} bytes unsent for ${stallMs} ms`;
        this.#deps.logger.info({ thread_id: this.#threadId }, `protocol socket closed: ${reason}`);
        this.close(CLOSE.policy, reason);
        done(false);
      }, stallMs);
      ws.send(text, (error) => done(!error && ws.readyState === WebSocket.OPEN));
    });
  }
}

export interface SocketDeps extends ProtocolSocketOptions {
  protocol: ThreadProtocolService;
  runs: RunService;
  events: RunEventLog;
  threads: ThreadService;
}
