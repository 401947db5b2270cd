import type { Logger } from "@agentplane/common";
import { connectRedis, type RedisClient } from "../../storage/redis-client.ts";
import { RedisRunEventLog, type RunEventLog } from "../../stream/event-log.ts";
import { type CancelAction, CancelActionSchema } from "../schemas.ts";
import { RedisRunStore } from "./redis-store.ts";
import type { RunStore } from "./store.ts";

/** Where runs, their queue, their event logs and the cross-process signals live. */
export interface RunBackend {
  store: RunStore;
  events: RunEventLog;
  /** Called with the thread id when a thread's runs may have become available (in any process). */
  onWake(listener: (threadId: string) => void): Promise<() => Promise<void>>;
  /** Called when a cancel of a running run was requested (in any process). */
  onCancel(listener: (runId: string, action: CancelAction) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

export interface RedisRunBackendOptions {
  url: string;
  /** Key prefix, e.g. the storage prefix plus `runs:`. */
  prefix: string;
  /** A thread's record key: runs are enqueued only while it exists. */
  threadKey?: (threadId: string) => string;
  /** Most entries one run's event log keeps (RUN_EVENT_LOG_MAX_EVENTS); the oldest are dropped. */
  maxLoggedEvents?: number;
  logger?: Logger;
}

/** Two connections: commands, and one in subscribe mode for every channel of this process. */
export async function createRedisRunBackend({
  url,
  prefix,
  threadKey,
  maxLoggedEvents,
  logger,
}: RedisRunBackendOptions): Promise<RunBackend> {
  const redis = await connectRedis(url, logger);
  const subscriber: RedisClient = redis.duplicate();
  subscriber.on("error", (error: unknown) => logger?.error({ err: error }, "redis subscriber error"));
  await subscriber.connect();
  const store = new RedisRunStore(redis, prefix, threadKey);
  const { wake, cancel } = store.channels;
  return {
    store,
    events: new RedisRunEventLog(redis, subscriber, prefix, maxLoggedEvents),
    async onWake(listener) {
      await subscriber.subscribe(wake, listener);
      return () => subscriber.unsubscribe(wake, listener);
    },
    async onCancel(listener) {
      const onMessage = (message: string) => {
        const [runId, action] = message.split(" ");
        const parsed = CancelActionSchema.safeParse(action);
        if (runId && parsed.success) listener(runId, parsed.data);
      };
      await subscriber.subscribe(cancel, onMessage);
      return () => subscriber.unsubscribe(cancel, onMessage);
    },
    async close() {
      await Promise.allSettled([subscriber.close(), redis.close()]);
    },
  };
}
