import type { RunnableConfig } from "@langchain/core/runnables";
import type { ChannelVersions, Checkpoint, CheckpointMetadata } from "@langchain/langgraph-checkpoint";
import type { RedisClient } from "../../storage/redis-client.ts";
import { RedisCheckpointer } from "../redis.ts";
import { scopeOf } from "../redis-layout.ts";

/**
 * A Redis checkpointer whose every checkpoint but the latest of its scope is in a cold segment
 * as soon as the next one is put: suites run against it read, list, copy, prune and delete
 * through segments, deterministically (packing in the background only starts past a size no
 * test reaches).
 */
export class PackingCheckpointer extends RedisCheckpointer {
  constructor(client: RedisClient, prefix: string) {
    super(client, { prefix, cold: { hot: 1, segment: Number.MAX_SAFE_INTEGER } });
  }

  override async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const stored = await super.put(config, checkpoint, metadata, newVersions);
    const { thread_id: threadId, checkpoint_ns: namespace } = stored.configurable as {
      thread_id: string;
      checkpoint_ns: string;
    };
    await this.cold.pack(threadId, scopeOf(threadId, namespace));
    return stored;
  }
}
