import {
  AIMessage,
  AIMessageChunk,
  HumanMessage,
  RemoveMessage,
  SystemMessage,
  ToolMessage,
} from "@langchain/core/messages";
import { StringPromptValue } from "@langchain/core/prompt_values";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { FastJsonPlusSerializer } from "./serde.ts";

const stock = new JsonPlusSerializer();
const fast = new FastJsonPlusSerializer();

/** Values a checkpoint holds: messages (nested in plain data too), the `lc: 2` records, edge cases. */
const samples: Record<string, unknown> = {
  scalars: [1, "two", true, null, 0.5],
  messages: [
    new HumanMessage({ content: "hi", id: "h1" }),
    new AIMessage({
      content: [{ type: "text", text: "hello" }],
      id: "a1",
      tool_calls: [{ id: "t1", name: "search", args: { q: "x" } }],
      usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
    }),
    new ToolMessage({ content: "result", tool_call_id: "t1" }),
  ],
  moreMessages: [
    new SystemMessage({ content: "be brief", additional_kwargs: { nested: { list: [1, { a: null }] } } }),
    new AIMessageChunk({ content: "partial", id: "c1", response_metadata: { model_name: "echo" } }),
    new RemoveMessage({ id: "h1" }),
    new HumanMessage({ content: "with lookalikes", additional_kwargs: { lc: 1, data: { __lc_escaped__: { x: 1 } } } }),
  ],
  otherLangChainObjects: [new StringPromptValue("a prompt")],
  nested: { state: { messages: [new HumanMessage("deep")], counts: new Map([["a", 1]]) }, tags: new Set(["x"]) },
  records: {
    pattern: /a+b/gi,
    error: new Error("boom"),
    bytes: new Uint8Array([1, 2, 255]),
    missing: undefined,
    list: [undefined, 1],
  },
  lookalikes: {
    lc2Unknown: { lc: 2, type: "constructor", id: ["Function"], args: ["return 1"] },
    lc2BadSet: { lc: 2, type: "constructor", id: ["Set"], args: "nope" },
    lc1NotConstructor: { lc: 1, type: "other", id: ["x"] },
  },
};

async function roundTrip(serializer: JsonPlusSerializer, value: unknown) {
  const [type, bytes] = await stock.dumpsTyped(value);
  return serializer.loadsTyped(type, bytes);
}

describe("FastJsonPlusSerializer", () => {
  for (const [name, value] of Object.entries(samples)) {
    it(`loads ${name} exactly as JsonPlusSerializer does`, async () => {
      const expected = await roundTrip(stock, value);
      const actual = await roundTrip(fast, value);
      expect(actual).toStrictEqual(expected);
      expect(JSON.stringify(actual)).toBe(JSON.stringify(expected));
    });
  }

  it("revives LangChain messages as message instances, also inside plain objects", async () => {
    const loaded = (await roundTrip(fast, samples.nested)) as { state: { messages: unknown[] } };
    const [message] = loaded.state.messages;
    expect(message).toBeInstanceOf(HumanMessage);
    expect((message as HumanMessage).content).toBe("deep");
  });

  const text = async (serializer: JsonPlusSerializer, value: unknown) => {
    const [type, bytes] = await serializer.dumpsTyped(value);
    return [type, Buffer.from(bytes).toString("utf8")];
  };

  for (const [name, value] of Object.entries(samples)) {
    it(`writes ${name} exactly as JsonPlusSerializer does`, async () => {
      expect(await text(fast, value)).toEqual(await text(stock, value));
    });
  }

  it("writes values with cycles, undefined at the top, sends and subclasses as JsonPlusSerializer does", async () => {
    const cyclic: Record<string, unknown> = { name: "loop", list: [1] };
    cyclic.self = cyclic;
    (cyclic.list as unknown[]).push(cyclic);
    class Tags extends Set<string> {}
    const odd = {
      send: { lg_name: "Send", node: "n", args: { x: 1 } },
      timedSend: { lg_name: "Send", node: "n", args: null, timeout: 5 },
      tags: new Tags(["a"]),
      buffer: Buffer.from([7, 8]),
      typeError: new TypeError("bad"),
      big: { toJSON: () => "big" },
    };
    for (const value of [cyclic, undefined, odd, new Uint8Array([1])]) {
      expect(await text(fast, value)).toEqual(await text(stock, value));
    }
  });
});
