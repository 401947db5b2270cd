import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { END, MessagesAnnotation, START, StateGraph } from "@langchain/langgraph";
import type { RedisClientType } from "redis";
import { v4 as uuidv4 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { leaseKeys } from "../runs/queue/redis-scripts.ts";
import { RedisCheckpointer } from "./redis.ts";

// Issue #16: a worker whose run was taken over (its lease expired, another attempt claimed the
// run) must not write checkpoints for it. The run queue's keys are set here as its scripts set
// them; the queue's own tests cover how they get there.

describe("checkpoint writes fenced by the run's lease", () => {
  let client: RedisClientType;
  let saver: RedisCheckpointer;
  let runsPrefix: string;

  beforeAll(async () => {
    client = await connectTestRedis();
    const prefix = uniquePrefix();
    runsPrefix = `${prefix}runs:`;
    saver = new RedisCheckpointer(client, { prefix, runsPrefix });
  });
  afterAll(() => client.quit());

  const graph = () =>
    new StateGraph(MessagesAnnotation)
      .addNode("reply", () => ({ messages: [new AIMessage("answer")] }))
      .addEdge(START, "reply")
      .addEdge("reply", END)
      .compile({ checkpointer: saver });
  const runConfig = (threadId: string, runId: string, attempt: number) => ({
    configurable: { thread_id: threadId },
    metadata: { run_id: runId, run_attempt: attempt },
  });
  /** What the run queue holds while `attempt` of the run executes on the thread. */
  async function leaseHeldBy(runId: string, threadId: string, attempt: number) {
    const [record, lock] = leaseKeys(runsPrefix, runId, threadId);
    await client.hSet(record, "attempt", attempt);
    await client.set(lock, runId);
  }

  it("refuses the checkpoints and writes of an attempt that lost its lease, keeps the holder's", async () => {
    const threadId = uuidv4();
    await leaseHeldBy("run-1", threadId, 2);
    const input = { messages: [new HumanMessage("q")] };
    await expect(graph().invoke(input, runConfig(threadId, "run-1", 1))).rejects.toThrow(/LEASE_LOST/);
    expect(await saver.getTuple({ configurable: { thread_id: threadId } })).toBeUndefined();

    await graph().invoke(input, runConfig(threadId, "run-1", 2));
    const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
    expect(latest?.checkpoint.channel_values.messages).toHaveLength(2);

    // The thread's lock went to the next run: the finished attempt's writes are refused too.
    await client.set(leaseKeys(runsPrefix, "run-2", threadId)[1], "run-2");
    await expect(
      saver.putWrites(
        { ...runConfig(threadId, "run-1", 2), ...{ configurable: latest?.config.configurable } },
        [["messages", [new AIMessage("late")]]],
        "task",
      ),
    ).rejects.toThrow(/LEASE_LOST/);
    expect((await saver.getTuple({ configurable: { thread_id: threadId } }))?.pendingWrites).toEqual([]);
  });

  it("leaves writes that belong to no run unfenced (state updates, other callers)", async () => {
    const threadId = uuidv4();
    await graph().invoke({ messages: [new HumanMessage("q")] }, { configurable: { thread_id: threadId } });
    await graph().updateState({ configurable: { thread_id: threadId } }, { messages: [new AIMessage("edit")] });
    const latest = await saver.getTuple({ configurable: { thread_id: threadId } });
    expect(latest?.checkpoint.channel_values.messages).toHaveLength(3);
  });
});
