import { AIMessage, type BaseMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { FastJsonPlusSerializer } from "../checkpoint/serde.ts";
import { toJsonValue } from "../threads/state.ts";
import { jsonText } from "./references.ts";
import { StoredListJson } from "./stored-json.ts";

const serde = new FastJsonPlusSerializer();
const message = (i: number): BaseMessage =>
  i % 2 === 0
    ? new HumanMessage({ id: `h${i}`, content: `question ${i} — “quoted” ✓` })
    : new AIMessage({ id: `a${i}`, content: [{ type: "text", text: `answer ${i}` }], tool_calls: [] });

/** Whether two pieces start at the same byte of the same memory (small buffers share a pool). */
const sameBytes = (a: Buffer | undefined, b: Buffer | undefined) =>
  a !== undefined && b !== undefined && a.buffer === b.buffer && a.byteOffset === b.byteOffset;

/** Each message's stored text, as the checkpointer keeps it. */
async function textsOf(messages: BaseMessage[]): Promise<Buffer[]> {
  return Promise.all(messages.map(async (m) => Buffer.from((await serde.dumpsTyped(m))[1])));
}

describe("StoredListJson", () => {
  it("is the JSON of the loaded list, when it grows, shrinks, changes in its middle or is empty", async () => {
    const lists = new StoredListJson(serde);
    const messages = Array.from({ length: 10 }, (_, i) => message(i));
    const texts = await textsOf(messages);
    const cases: [string, BaseMessage[], Buffer[]][] = [
      ["first", messages, texts],
      ["appended", [...messages, message(10)], [...texts, ...(await textsOf([message(10)]))]],
      [
        "appended again",
        [...messages, message(10), message(11)],
        [...texts, ...(await textsOf([message(10), message(11)]))],
      ],
      [
        "replaced in the middle",
        [...messages.slice(0, 4), message(40), ...messages.slice(5)],
        [...texts.slice(0, 4), ...(await textsOf([message(40)])), ...texts.slice(5)],
      ],
      ["shrunk", messages.slice(0, 3), texts.slice(0, 3)],
      ["empty", [], []],
      ["one", [messages[0] as BaseMessage], texts.slice(0, 1)],
    ];
    const made = [];
    for (const [what, list, listTexts] of cases) {
      const json = await lists.json("thread\0\0messages", listTexts);
      expect(jsonText(json), what).toBe(JSON.stringify(list.map(toJsonValue)));
      made.push(json);
    }
    // Later versions appended in the same buffer: what earlier ones answered is unchanged.
    for (const [i, [what, list]] of cases.entries()) {
      expect(jsonText(made[i] ?? []), what).toBe(JSON.stringify(list.map(toJsonValue)));
    }
  });

  it("answers the same list again with the same bytes, and keeps lists of other channels apart", async () => {
    const lists = new StoredListJson(serde);
    const texts = await textsOf([message(0), message(1)]);
    const [first] = await lists.json("a\0\0messages", texts);
    expect((await lists.json("a\0\0messages", texts))[0]).toBe(first);
    const other = await textsOf([message(2)]);
    expect(jsonText(await lists.json("b\0\0messages", other))).toBe(JSON.stringify([toJsonValue(message(2))]));
    expect(jsonText(await lists.json("a\0\0messages", [...texts, ...other]))).toBe(
      JSON.stringify([message(0), message(1), message(2)].map(toJsonValue)),
    );
  });

  it("answers an earlier state of the list from the bytes made, and keeps the longer list for the next version", async () => {
    const lists = new StoredListJson(serde);
    const messages = Array.from({ length: 12 }, (_, i) => message(i));
    const texts = await textsOf(messages);
    const [latest] = await lists.json("t\0\0messages", texts.slice(0, 10));
    // History reads older states, newest first: each a prefix of the one before.
    for (const length of [8, 6, 1]) {
      const earlier = await lists.json("t\0\0messages", texts.slice(0, length));
      expect(jsonText(earlier)).toBe(JSON.stringify(messages.slice(0, length).map(toJsonValue)));
      expect(sameBytes(earlier[0], latest)).toBe(true);
    }
    // The next run's list extends the latest one, not the last state history read: appended in place.
    const [next] = await lists.json("t\0\0messages", texts);
    expect(jsonText([next as Buffer, Buffer.from("]")])).toBe(JSON.stringify(messages.map(toJsonValue)));
    expect(sameBytes(next, latest)).toBe(true);
  });
});
