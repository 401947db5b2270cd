import { randomUUID } from "node:crypto";
import { type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { MemorySaver } from "@langchain/langgraph";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "../../../../testing/redis.ts";
import { editsInPlace } from "../testing/graphs.ts";
import { type ServerProcess, spawnServer } from "../testing/process.ts";

/**
 * The worker tells the checkpointer when a run's graph saved its last checkpoint, and the put of
 * that checkpoint then takes the messages the put before it checked without a second check
 * (issue #21). A last node that edits earlier messages in place finishes before either put
 * begins: its edits must be in what every process reads, as on LangGraph's own checkpointer.
 */

const RUNS = 6;
const question = (i: number) => ({ id: `q${i}`, content: `question ${i} `.repeat(12) });

type Shown = { type: string; id?: string; content: unknown };

describe("the last put of a run whose last node edited its input in place", () => {
  const prefix = `graph-finished-${randomUUID().slice(0, 8)}:`;
  let worker: ServerProcess;
  let reader: ServerProcess;

  beforeAll(async () => {
    worker = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "1" });
    reader = await spawnServer(testRedisUrl(), prefix, { N_WORKERS: "0" });
  });
  afterAll(async () => {
    await Promise.all([worker?.stop(), reader?.stop()]);
  });

  it("stores the edits, as MemorySaver does", async () => {
    const thread = await worker.client.threads.create();
    const answers: unknown[] = [];
    for (let i = 0; i < RUNS; i++) {
      const input = { messages: [{ role: "human", ...question(i) }] };
      answers.push(await worker.client.runs.wait(thread.thread_id, "editing", { input }));
    }

    const local = editsInPlace.compile({ checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "local" } };
    for (let i = 0; i < RUNS; i++) await local.invoke({ messages: [new HumanMessage(question(i))] }, config);
    const expected = ((await local.getState(config)).values.messages as BaseMessage[]).map(
      (message): Shown => ({ type: message.getType(), id: message.id, content: message.content }),
    );
    expect(expected[0]?.content).toBe(`${question(0).content}${"+".repeat(RUNS)}`);

    const shown = (values: unknown) =>
      ((values as { messages: Shown[] }).messages ?? []).map(({ type, id, content }) => ({ type, id, content }));
    expect(shown(answers.at(-1))).toEqual(expected);
    for (const server of [worker, reader]) {
      expect(shown((await server.client.threads.getState(thread.thread_id)).values)).toEqual(expected);
    }
  });
});
