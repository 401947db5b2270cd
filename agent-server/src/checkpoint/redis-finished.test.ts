import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import type { RunnableConfig } from "@langchain/core/runnables";
import { type Checkpoint, emptyCheckpoint, uuid6 } from "@langchain/langgraph-checkpoint";
import { v4 as uuidv4 } from "uuid";
import { describe, expect, it } from "vitest";
import type { RedisCheckpointer } from "./redis.ts";
import { redisSavers } from "./testing/redis-savers.ts";

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
  const suite = redisSavers("cpf");
  const { saver } = suite;

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

  /** What happens around the put before the last: `before` it begins, and `after` it stored its checkpoint. */
  interface Around {
    before?(writer: RedisCheckpointer, threadId: string, last: Checkpoint): unknown;
    after?(writer: RedisCheckpointer, threadId: string, last: Checkpoint, stored: string): unknown;
  }

  /**
   * Puts a conversation, then the step before the graph's last, edits the first message in place,
   * and puts the last step: the first message as stored, and as it was before the edit.
   */
  async function lastTwoPuts({ before, after }: Around) {
    const threadId = uuidv4();
    const writer = saver();
    const earlier = conversation(40);
    const start = await put(writer, threadId, undefined, checkpointOf(earlier, 1));
    const asked = [...earlier, new HumanMessage({ id: "question", content: "one more" })];
    // Ids in time order: the latest checkpoint is the one with the greatest id.
    const middle = checkpointOf(asked, 2);
    const last = checkpointOf([...asked, new AIMessage({ id: "answer", content: "done" })], 3);
    const original = String(earlier[0]?.content);
    await before?.(writer, threadId, last);
    const beforeLast = await put(writer, threadId, start, middle);
    await after?.(writer, threadId, last, beforeLast);
    (asked[0] as HumanMessage).content = "edited in place";
    await put(writer, threadId, beforeLast, last);
    return { stored: await storedFirst(threadId), original };
  }

  const finished: Around["before"] = (writer, threadId, last) => writer.graphFinished(threadId, last.id);

  it("does not check again what the put before it checked once the graph had finished", async () => {
    const { stored, original } = await lastTwoPuts({ before: finished });
    expect(stored).toBe(original);
  });

  it("checks again when the graph finished at another checkpoint, or is not known to have finished", async () => {
    const elsewhere = await lastTwoPuts({ before: (writer, threadId) => writer.graphFinished(threadId, uuid6(-1)) });
    expect(elsewhere.stored).toBe("edited in place");
    const unknown = await lastTwoPuts({});
    expect(unknown.stored).toBe("edited in place");
  });

  it("checks again when the graph finished only after the put before it began", async () => {
    const late = await lastTwoPuts({ after: finished });
    expect(late.stored).toBe("edited in place");
  });

  it("checks again when a task wrote or a reader was handed the messages between the two puts", async () => {
    const written = await lastTwoPuts({
      before: finished,
      after: (writer, threadId, _last, stored) =>
        writer.putWrites(config(threadId, stored), [["messages", []]], "late-task"),
    });
    expect(written.stored).toBe("edited in place");
    const read = await lastTwoPuts({
      before: finished,
      after: (writer, threadId) => writer.getTuple(config(threadId)),
    });
    expect(read.stored).toBe("edited in place");
  });
});
