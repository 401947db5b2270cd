import { Annotation, END, START, StateGraph } from "@langchain/langgraph";
import type { RedisClientType } from "redis";
import { v4 as uuidv4 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestRedis, uniquePrefix } from "../../../testing/redis.ts";
import { RedisCheckpointer } from "./redis.ts";

const State = Annotation.Root({
  items: Annotation<string[]>({ reducer: (left, right) => left.concat(right), default: () => [] }),
  untouched: Annotation<string>,
});

const ROUNDS = 100;

/**
 * Whole-thread changes (prune, copy, a run's rollback) racing the puts of a running graph, each
 * on its own connection as separate replicas would be: no checkpoint may lose a channel value.
 */
describe("RedisCheckpointer whole-thread changes under concurrent writes", () => {
  const clients: RedisClientType[] = [];
  let writer: RedisCheckpointer;
  let changer: RedisCheckpointer;

  beforeAll(async () => {
    clients.push(await connectTestRedis(), await connectTestRedis());
    const prefix = uniquePrefix("cp-race");
    writer = new RedisCheckpointer(clients[0] as RedisClientType, { prefix });
    changer = new RedisCheckpointer(clients[1] as RedisClientType, { prefix });
  });
  afterAll(async () => {
    for (const client of clients) await client.quit();
  });

  const graph = () =>
    new StateGraph(State)
      .addNode("step", () => ({ items: ["step"] }))
      .addEdge(START, "step")
      .addEdge("step", END)
      .compile({ checkpointer: writer });

  /** The latest checkpoint reads the state's channels with the values the runs left: what a lost blob breaks. */
  async function expectComplete(saver: RedisCheckpointer, threadId: string, items: number, last = "step") {
    const values = (await saver.getTuple({ configurable: { thread_id: threadId } }))?.checkpoint.channel_values;
    expect(values?.untouched).toBe("same");
    // The run's last checkpoint, not an earlier one a prune left as the latest.
    expect((values?.items as string[] | undefined)?.at(-1)).toBe(last);
    expect((values?.items as string[] | undefined)?.length).toBe(items);
  }

  it(`prunes and copies in a loop while ${ROUNDS} runs put checkpoints: every channel value stays readable`, async () => {
    const thread = uuidv4();
    const agent = graph();
    const copies: { id: string; items: number; last: string }[] = [];
    let running = true;
    // Another replica pruning and copying the thread the whole time, as fast as it can.
    const changes = (async () => {
      while (running) {
        const copy = uuidv4();
        await Promise.all([changer.pruneThread(thread), changer.copyThread(thread, copy)]);
        const copied = await changer.getTuple({ configurable: { thread_id: copy } });
        const copiedItems = copied?.checkpoint.channel_values.items as string[] | undefined;
        // A copy taken mid-run ends with that run's input, one taken between runs with its step.
        const last = copiedItems?.at(-1);
        if (copiedItems && last) copies.push({ id: copy, items: copiedItems.length, last });
      }
    })();
    try {
      for (let round = 1; round <= ROUNDS; round++) {
        await agent.invoke({ items: [`r${round}`], untouched: "same" }, { configurable: { thread_id: thread } });
        await expectComplete(changer, thread, 2 * round);
      }
    } finally {
      running = false;
      await changes;
    }
    // Each copy is the thread as it was at one moment, complete.
    for (const copy of copies) await expectComplete(changer, copy.id, copy.items, copy.last);
    expect(copies.length).toBeGreaterThan(0);
  });

  it(`a run's rollback racing the next run's puts for ${ROUNDS} rounds: the next run's values stay`, async () => {
    const thread = uuidv4();
    const agent = graph();
    for (let round = 0; round < ROUNDS; round++) {
      const doomed = `doomed-${round}`;
      await agent.invoke({ items: ["x"] }, { configurable: { thread_id: thread }, metadata: { run_id: doomed } });
      await Promise.all([
        agent.invoke({ items: [`r${round}`], untouched: "same" }, { configurable: { thread_id: thread } }),
        changer.deleteRun(thread, doomed),
      ]);
      // Whichever order they ran in, the latest checkpoint reads every channel it names.
      const tuple = await changer.getTuple({ configurable: { thread_id: thread } });
      expect((tuple?.checkpoint.channel_values.items as string[]).at(-1)).toBe("step");
      expect(tuple?.checkpoint.channel_values.untouched).toBe("same");
    }
  });
});
