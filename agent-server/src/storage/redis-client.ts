import type { Logger } from "@agentplane/common";
import { createClient, type RedisClientType } from "redis";

export type RedisClient = RedisClientType;

/** How often the watchdog pings, and how long a ping (and the health check's) may take. */
const WATCHDOG_INTERVAL_MS = 1000;
const PING_TIMEOUT_MS = 2000;
/** How late the timeout may fire before the process counts as stalled, and the grace it then gets. */
const STALL_TOLERANCE_MS = 100;
const STALL_GRACE_MS = 250;

/**
 * PING, rejected after PING_TIMEOUT_MS without an answer. node-redis's own command timeout only
 * covers the wait to be written, not the wait for the reply, so it cannot tell a silent server.
 */
export async function pingWithin(client: RedisClient): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const started = performance.now();
  let graced = false;
  const timeout = new Promise<never>((_, reject) => {
    const expire = () => {
      // A timer that fires late means this process, not Redis, was stalled (a blocked event loop,
      // a starved CPU): the ping may not even have been written. One short grace lets it be sent
      // and read before a healthy connection is dropped.
      if (!graced && performance.now() - started > PING_TIMEOUT_MS + STALL_TOLERANCE_MS) {
        graced = true;
        timer = setTimeout(expire, STALL_GRACE_MS);
        return;
      }
      reject(new Error(`redis did not answer PING within ${PING_TIMEOUT_MS} ms`));
    };
    timer = setTimeout(expire, PING_TIMEOUT_MS);
  });
  try {
    await Promise.race([client.ping(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Connects to Redis. Errors after the first connect are logged (node-redis reconnects by
 * itself) instead of crashing the process on an unhandled 'error' event.
 *
 * No per-command timeout: node-redis arms a timer and an AbortSignal for every command when one
 * is set, a few percent of a run's CPU. A Redis that stops answering (paused, hung, a network
 * that drops packets without resetting the connection) keeps the socket open, so neither the
 * socket nor keep-alive notices it, and every command would wait for ever. A watchdog pings
 * instead, once a second with a timeout; when a ping goes unanswered it drops the connection,
 * which fails every waiting command at once, and connects again, until Redis answers.
 */
export async function connectRedis(url: string, logger?: Logger): Promise<RedisClient> {
  const client: RedisClient = createClient({ url, commandOptions: { timeout: undefined } });
  client.on("error", (error: unknown) => logger?.error({ err: error }, "redis connection error"));
  await client.connect();
  watch(client, logger);
  return client;
}

function watch(client: RedisClient, logger?: Logger): void {
  let probing = false;
  const timer = setInterval(async () => {
    if (probing) return;
    if (!client.isOpen) {
      // Closed by the server's shutdown: nothing to watch any more.
      if (!reconnecting) clearInterval(timer);
      return;
    }
    probing = true;
    try {
      await pingWithin(client);
    } catch (error) {
      if (!client.isOpen) return;
      logger?.error({ err: error }, "redis did not answer a ping: reconnecting");
      reconnect();
    } finally {
      probing = false;
    }
  }, WATCHDOG_INTERVAL_MS);
  timer.unref();
  let reconnecting = false;
  const reconnect = () => {
    reconnecting = true;
    client.destroy();
    client
      .connect()
      .catch((error: unknown) => logger?.error({ err: error }, "redis reconnect failed"))
      .finally(() => {
        reconnecting = false;
      });
  };
}
