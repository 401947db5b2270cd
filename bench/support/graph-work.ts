import type { RunnableConfig } from "@langchain/core/runnables";
import { MemorySaver } from "@langchain/langgraph";
import type { Checkpoint, CheckpointMetadata, CheckpointTuple } from "@langchain/langgraph-checkpoint";
import { graph } from "../../agent-server/example/src/agent.ts";
import { input } from "./run-load.ts";

/**
 * The example graph's own CPU per run on a thread of N earlier messages, in this process: what
 * LangGraph and the graph do with the longer input (the messages reducer coercing and merging
 * the list, the channels, the node handing the list to the model, the stream of values), with
 * none of the server's work (no serialisation, no Redis, no HTTP, no JSON answer).
 *
 * Each run starts from the same checkpoint, handed out by `FixedStateSaver` as the server's
 * checkpointer hands out a loaded one: a new list of already-built messages. Its puts keep
 * nothing, so the saver's own cost does not grow with N (a slice of the list per run).
 */
class FixedStateSaver extends MemorySaver {
  private readonly seed: CheckpointTuple;

  constructor(seed: CheckpointTuple) {
    super();
    this.seed = seed;
  }

  override async getTuple(): Promise<CheckpointTuple | undefined> {
    const { checkpoint } = this.seed;
    const messages = checkpoint.channel_values.messages as unknown[];
    const channelValues = { ...checkpoint.channel_values, messages: [...messages] };
    return { ...this.seed, checkpoint: { ...checkpoint, channel_values: channelValues } };
  }

  override async put(config: RunnableConfig, checkpoint: Checkpoint, _metadata: CheckpointMetadata) {
    return { configurable: { ...config.configurable, checkpoint_id: checkpoint.id } };
  }

  override async putWrites(): Promise<void> {}
}

/** The checkpoint a thread of these earlier messages starts its next run from, loaded. */
async function seedOf(messages: unknown[]): Promise<CheckpointTuple> {
  const saver = new MemorySaver();
  graph.checkpointer = saver;
  const config = { configurable: { thread_id: "seed" } };
  if (messages.length > 0) await graph.updateState(config, { messages }, "call_model");
  const tuple = await saver.getTuple(config);
  if (!tuple) throw new Error("graph-work: no seed checkpoint");
  return tuple;
}

/** CPU milliseconds per run of the example graph at each size, over alternating rounds. */
export async function graphCpuPerRun(
  sizes: number[],
  earlierMessages: (count: number) => unknown[],
  rounds: number,
  runsPerRound: number,
): Promise<Map<number, number>> {
  const savers = new Map<number, FixedStateSaver>();
  for (const size of sizes) savers.set(size, new FixedStateSaver(await seedOf(earlierMessages(size))));
  // The server's modes for `…/wait` on a thread: values, and checkpoints for its event references.
  const runOnce = async (size: number) => {
    graph.checkpointer = savers.get(size);
    const options = { configurable: { thread_id: "bench" }, streamMode: ["values", "checkpoints"] as const };
    for await (const _chunk of await graph.stream(input as never, options as never));
  };
  for (const size of sizes) for (let i = 0; i < runsPerRound; i++) await runOnce(size); // JIT warm-up
  const cpuMs = new Map<number, number>(sizes.map((size) => [size, 0]));
  for (let round = 0; round < rounds; round++) {
    for (const size of round % 2 === 0 ? sizes : [...sizes].reverse()) {
      const before = process.cpuUsage();
      for (let i = 0; i < runsPerRound; i++) await runOnce(size);
      const used = process.cpuUsage(before);
      cpuMs.set(size, (cpuMs.get(size) ?? 0) + (used.user + used.system) / 1000);
    }
  }
  return new Map(sizes.map((size) => [size, (cpuMs.get(size) ?? 0) / (rounds * runsPerRound)]));
}
