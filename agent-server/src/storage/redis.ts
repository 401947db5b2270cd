import type { Logger } from "@agentplane/common";
import { RedisAssistantStore } from "../assistants/redis-store.ts";
import { RedisCheckpointer } from "../checkpoint/redis.ts";
import { RedisStore } from "../long-term-store/redis-store.ts";
import type { LongTermStoreOptions } from "../long-term-store/store.ts";
import { CheckpointValues } from "../stream/references.ts";
import { runQueuePrefix } from "../threads/redis-index.ts";
import { RedisThreadStore } from "../threads/redis-store.ts";
import { connectRedis, pingWithin } from "./redis-client.ts";
import type { Storage } from "./types.ts";

export interface RedisStorageOptions {
  url: string;
  /** Prepended to every key, so several deployments can share one Redis. */
  prefix: string;
  logger?: Logger;
  /** The long-term store's TTL defaults and semantic index (`store` in `langgraph.json`). */
  store?: LongTermStoreOptions;
}

/** Every store on one Redis connection (node-redis pipelines concurrent commands on it). */
export async function createRedisStorage({
  url,
  prefix,
  logger,
  store: storeOptions,
}: RedisStorageOptions): Promise<Storage> {
  const client = await connectRedis(url, logger);
  const store = new RedisStore(client, { ...storeOptions, prefix });
  const checkpointer = new RedisCheckpointer(client, { prefix, runsPrefix: runQueuePrefix(prefix) });
  const checkpointValues = new CheckpointValues(checkpointer);
  return {
    kind: "redis",
    assistants: new RedisAssistantStore(client, prefix),
    threads: new RedisThreadStore(client, prefix, checkpointValues),
    checkpointer,
    checkpointValues,
    store,
    redis: client,
    // The health check answers within the ping's timeout whether Redis answers or not.
    ping: () => pingWithin(client),
    close: async () => {
      store.stop();
      if (client.isOpen) await client.close();
    },
  };
}
