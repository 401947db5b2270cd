import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import type { RedisClientType } from "redis";
import { v4 as uuidv4 } from "uuid";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "./redis.ts";

/**
 * The put of a graph's last checkpoint takes the messages that the put before it checked after
 * the graph had finished (`graphFinished`), without checking them again. To show that it does,
 * and when it does not, each test edits a message in place between the two puts: something no
 * code of a finished graph can do, so a trusted put stores the text as checked, and any put that
 * may follow code checks again and stores the edit.
 */

const config = (threadId: string, checkpointId?: string): RunnableConfig => ({
  configurable: { thread_id: threadId, ...(checkpointId && { checkpoint_id: checkpointId }) },
});

const conversation = (length: number): BaseMessage[] =>
  Array.from({ length }, (_, i) =>
    i % 2 === 0
      ? new HumanMessage({ id: `h${i}`, content: `question ${i} `.repeat(10) })
      : new AIMessage({ id: `ai${i}`, content: `answer ${i} `.repeat(10) }),
  );

describe("RedisCheckpointer after its graph finished", () => {
  let client: RedisClientType;
  let prefix: string;
  const saver = () => new RedisCheckpointer(client, { prefix });

  beforeAll(async () => {
    client = await connectTestRedis();
  });
  afterAll(() => client.quit());
  beforeEach(() => {
    prefix = uniquePrefix("cpf");
  });

  /** A checkpoint of `messages` at version `step`, to be put as the child of `parentId`. */
  const checkpointOf = (messages: BaseMessage[], step: number): Checkpoint => ({
    ...emptyCheckpoint(),
    id: uuid6(-1),
    channel_values: { messages },
    channel_versions: { messages: `${step}.5` },
  });

  const put = async (writer: RedisCheckpointer, threadId: string, parentId: string | undefined, next: Checkpoint) => {
    const version = next.channel_versions.messages as string;
    const metadata = { source: "loop" as const, step: Number.parseInt(version, 10), parents: {} };
    await writer.put(config(threadId, parentId), next, metadata, { messages: version });
    return next.id;
  };

  const storedFirst = async (threadId: string) => {
    const tuple = await saver().getTuple(config(threadId));
    return String((tuple?.checkpoint.channel_values.messages as BaseMessage[])[0]?.content);
  };

  /**
   * Puts a conversation, then the step before the graph's last (`between` runs just before it is
   * put), edits the first message in place, and puts the last step. The first message as stored.
   */
  async function lastTwoPuts(between: (writer: RedisCheckpointer, threadId: string, last: Checkpoint) => unknown) {
    const threadId = uuidv4();
    const writer = saver();
    const earlier = conversation(40);
    const start = await put(writer, threadId, undefined, checkpointOf(earlier, 1));
    const before = [...earlier, new HumanMessage({ id: "question", content: "one more" })];
    // Ids in time order: the latest checkpoint is the one with the greatest id.
    const middle = checkpointOf(before, 2);
    const last = checkpointOf([...before, new AIMessage({ id: "answer", content: "done" })], 3);
    const original = String(earlier[0]?.content);
    await between(writer, threadId, last);
    const beforeLast = await put(writer, threadId, start, middle);
    (before[0] as HumanMessage).content = "edited in place";
    await put(writer, threadId, beforeLast, last);
    return { stored: await storedFirst(threadId), original };
  }

  it("does not check again what the put before it checked once the graph had finished", async () => {
    const { stored, original } = await lastTwoPuts((writer, threadId, last) => writer.graphFinished(threadId, last.id));
    expect(stored).toBe(original);
  });

  it("checks again when the graph finished at another checkpoint, or is not known to have finished", async () => {
    const elsewhere = await lastTwoPuts((writer, threadId) => writer.graphFinished(threadId, uuid6(-1)));
    expect(elsewhere.stored).toBe("edited in place");
    const unknown = await lastTwoPuts(() => {});
    expect(unknown.stored).toBe("edited in place");
  });

  it("checks again when the graph finished only after the put before it began", async () => {
    const threadId = uuidv4();
    const writer = saver();
    const earlier = conversation(40);
    const start = await put(writer, threadId, undefined, checkpointOf(earlier, 1));
    const before = [...earlier, new HumanMessage({ id: "question", content: "one more" })];
    const middle = checkpointOf(before, 2);
    const last = checkpointOf([...before, new AIMessage({ id: "answer", content: "done" })], 3);
    const beforeLast = await put(writer, threadId, start, middle);
    writer.graphFinished(threadId, last.id);
    (before[0] as HumanMessage).content = "edited in place";
    await put(writer, threadId, beforeLast, last);
    expect(await storedFirst(threadId)).toBe("edited in place");
  });

  it("checks again when a task wrote or a reader was handed the messages between the two puts", async () => {
    const written = await lastTwoPuts(async (writer, threadId, last) => {
      writer.graphFinished(threadId, last.id);
      // Held until the put before the last has stored its checkpoint, as LangGraph's order has it.
      writer.put = wrapAfterFirst(writer.put.bind(writer), async (config) => {
        await writer.putWrites(config, [["messages", []]], "late-task");
      });
    });
    expect(written.stored).toBe("edited in place");
    const read = await lastTwoPuts(async (writer, threadId, last) => {
      writer.graphFinished(threadId, last.id);
      writer.put = wrapAfterFirst(writer.put.bind(writer), async () => {
        await writer.getTuple(config(threadId));
      });
    });
    expect(read.stored).toBe("edited in place");
  });
});

type Put = RedisCheckpointer["put"];

/** `put` that runs `after` (with the put's config) once its first call has stored its checkpoint. */
function wrapAfterFirst(put: Put, after: (config: RunnableConfig) => Promise<unknown>): Put {
  let calls = 0;
  return async (config, checkpoint, metadata, versions) => {
    const stored = await put(config, checkpoint, metadata, versions);
    if (calls++ === 0) await after(stored);
    return stored;
  };
}
