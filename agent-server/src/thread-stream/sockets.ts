import type { Socket } from "node:net";
import { HttpError, parseRequestPart } from "@agentplane/common";
import type { RequestHandler } from "express";
import { WebSocketServer } from "ws";
import { z } from "zod";
import { requestAuth } from "../custom-auth/module.ts";
import { forwardedHeaders } from "../http/configurable-headers.ts";
import type { RunService } from "../runs/service.ts";
import type { RunEventLog } from "../stream/event-log.ts";
import type { ThreadService } from "../threads/service.ts";
import type { ThreadProtocolService } from "./service.ts";
import { upgradeOf } from "./upgrade.ts";
import { CLOSE, ProtocolSocket, type ProtocolSocketOptions, type SocketDeps } from "./websocket.ts";

const ThreadParamsSchema = z.object({ thread_id: z.uuid() });
const STREAM_PATH = /^\/threads\/([^/]+)\/stream\/events\/?$/;

/** The protocol's WebSockets of one server: the handshake, and pings while they are open. */
export class ProtocolSockets {
  readonly #deps: SocketDeps;
  readonly #server: WebSocketServer;
  readonly #open = new Set<ProtocolSocket>();
  #pinger: NodeJS.Timeout | undefined;

  constructor(
    protocol: ThreadProtocolService,
    runs: RunService,
    events: RunEventLog,
    threads: ThreadService,
    options: ProtocolSocketOptions,
  ) {
    this.#deps = { ...options, protocol, runs, events, threads };
    this.#server = new WebSocketServer({ noServer: true, maxPayload: options.maxPayload });
  }

  /**
   * Middleware (after authentication) that accepts upgrade requests to the protocol's path; an
   * authenticated request only, and one with a valid thread id (else the usual JSON 4xx).
   */
  accept(): RequestHandler {
    return (req, res, next) => {
      const upgrade = upgradeOf(req);
      const match = STREAM_PATH.exec(req.path);
      if (!upgrade || !match || req.method !== "GET") return next();
      try {
        const { thread_id: threadId } = parseRequestPart(
          ThreadParamsSchema,
          { thread_id: decodeURIComponent(match[1] ?? "") },
          "path",
        );
        if (req.get("upgrade")?.toLowerCase() !== "websocket") throw new HttpError(400, "Upgrade to websocket only");
        const auth = requestAuth(req);
        res.detachSocket(upgrade.socket as Socket);
        this.#server.handleUpgrade(req, upgrade.socket, upgrade.head, (ws) => {
          const socket = new ProtocolSocket(
            ws,
            upgrade.socket as Socket,
            threadId,
            forwardedHeaders(req),
            auth,
            this.#deps,
          );
          const forget = upgrade.onShutdown(() => socket.close(CLOSE.goingAway, "server shutting down"));
          this.#open.add(socket);
          this.#schedulePings();
          ws.on("close", () => {
            forget();
            this.#open.delete(socket);
            this.#schedulePings();
          });
        });
      } catch (error) {
        next(error);
      }
    };
  }

  /** One timer for every open socket, none while there is none. */
  #schedulePings(): void {
    if (this.#open.size === 0) {
      clearInterval(this.#pinger);
      this.#pinger = undefined;
    } else if (!this.#pinger) {
      const { heartbeatMs } = this.#deps;
      this.#pinger = setInterval(() => {
        for (const socket of this.#open) socket.ping();
      }, heartbeatMs);
      this.#pinger.unref();
    }
  }
}
