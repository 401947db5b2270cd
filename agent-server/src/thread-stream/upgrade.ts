import { type IncomingMessage, type Server, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Express } from "express";

/** What a handler needs to take over an upgrade request's connection. */
export interface Upgrade {
  socket: Duplex;
  head: Buffer;
  /** Registers what closes the accepted connection when the server shuts down; returns its removal. */
  onShutdown(close: () => void): () => void;
}

const upgrades = new WeakMap<IncomingMessage, Upgrade>();

/** The connection of an upgrade request (`Upgrade:` header), or undefined for an ordinary request. */
export const upgradeOf = (req: IncomingMessage): Upgrade | undefined => upgrades.get(req);

/**
 * Sends every upgrade request of `server` through `app`, as any other request: CORS, API keys and
 * custom auth run first and answer a refusal as the HTTP response it would be (401 JSON), before
 * any WebSocket frame. A handler that accepts takes the connection from `upgradeOf(req)`; any
 * other route answers over HTTP and the connection closes. `close` asks every accepted
 * connection to close (the HTTP server's own close waits for them).
 */
export function routeUpgrades(server: Server, app: Express): { close(): void } {
  const closers = new Set<() => void>();
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A client that resets the connection before the handshake must not crash the process.
    socket.on("error", () => socket.destroy());
    upgrades.set(req, {
      socket,
      head,
      onShutdown: (close) => {
        closers.add(close);
        return () => closers.delete(close);
      },
    });
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.on("finish", () => socket.end());
    app(req, res);
  });
  return {
    close: () => {
      for (const close of closers) close();
      closers.clear();
    },
  };
}
