import { AIMessage, HumanMessage, type MessageContentComplex, ToolMessage } from "@langchain/core/messages";
import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { itemsOf, rememberedTexts, rememberLoadedList } from "./message-texts.ts";
import { FastJsonPlusSerializer } from "./serde.ts";

const stock = new JsonPlusSerializer();

const text = async (serializer: JsonPlusSerializer, value: unknown) => {
  const [, bytes] = await serializer.dumpsTyped(value);
  return Buffer.from(bytes).toString("utf8");
};

/** Twelve messages of every common shape: tool calls, content blocks, nested kwargs, metadata. */
function conversation() {
  const messages = [];
  for (let i = 0; i < 4; i++) {
    messages.push(
      new HumanMessage({ id: `h${i}`, content: `question ${i}`, additional_kwargs: { meta: { tags: ["a"] } } }),
      new AIMessage({
        id: `a${i}`,
        content: [{ type: "text", text: `answer ${i}` }],
        tool_calls: [{ id: `t${i}`, name: "search", args: { q: `q${i}` } }],
        usage_metadata: { input_tokens: 1, output_tokens: 2, total_tokens: 3 },
      }),
      new ToolMessage({ id: `r${i}`, content: `result ${i}`, tool_call_id: `t${i}` }),
    );
  }
  return messages;
}

describe("remembered message texts", () => {
  it("writes a conversation as JsonPlusSerializer does, again and after every kind of edit in place", async () => {
    const fast = new FastJsonPlusSerializer();
    const messages = conversation();
    const [human, ai, tool] = messages as [HumanMessage, AIMessage, ToolMessage];
    const edits: [string, () => void][] = [
      ["nothing", () => {}],
      ["a field replaced", () => (human.content = "rewritten")],
      ["a nested kwarg", () => ((human.additional_kwargs.meta as { tags: string[] }).tags[0] = "b")],
      ["a tool call's argument", () => ((ai.tool_calls?.[0]?.args as { q: string }).q = "other")],
      ["a content block", () => (ai.content as MessageContentComplex[]).push({ type: "text", text: "more" })],
      ["a field added", () => (tool.name = "named")],
      ["a field removed", () => delete human.additional_kwargs.meta],
      ["a message added", () => messages.push(new HumanMessage({ id: "new", content: "new" }))],
    ];
    for (const [edit, apply] of edits) {
      apply();
      expect(await text(fast, messages), edit).toBe(await text(stock, messages));
    }
  });

  it("notices every edit of plain chat messages (empty lists and objects, kwargs that are their fields)", async () => {
    const fast = new FastJsonPlusSerializer();
    const chat = () =>
      Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0
          ? new HumanMessage({ id: `h${i}`, content: `q${i}` })
          : new AIMessage({ id: `a${i}`, content: `a${i}` }),
      );
    const edits: [string, (message: AIMessage) => void][] = [
      ["content replaced", (m) => (m.content = "changed")],
      ["content replaced in lc_kwargs only", (m) => (m.lc_kwargs.content = "changed")],
      ["an empty object filled", (m) => (m.additional_kwargs.extra = 1)],
      ["an empty object in lc_kwargs replaced", (m) => (m.lc_kwargs.response_metadata = { model: "x" })],
      ["an empty list filled", (m) => m.tool_calls?.push({ id: "t", name: "search", args: {} })],
      ["an empty list replaced", (m) => (m.invalid_tool_calls = [{ id: "t", name: "bad", args: "{" }])],
      ["a list of strings edited", (m) => (m.lc_namespace[1] = "other")],
      ["id replaced", (m) => (m.id = "other")],
      ["a field added", (m) => (m.name = "named")],
      ["a field removed", (m) => delete (m as { usage_metadata?: unknown }).usage_metadata],
    ];
    for (const [edit, apply] of edits) {
      const messages = chat();
      await fast.dumpsTyped(messages);
      // Edited as a graph would: the loaded forms a read hands out, and the graph's own objects.
      const [type, bytes] = await fast.dumpsTyped(messages);
      const loaded = (await fast.loadsTyped(type, bytes)) as AIMessage[];
      apply(loaded[1] as AIMessage);
      apply(messages[3] as AIMessage);
      expect(await text(fast, loaded), edit).toBe(await text(stock, loaded));
      expect(await text(fast, messages), edit).toBe(await text(stock, messages));
    }
  });

  it("writes lists of other objects, undefined, functions and cycles as JsonPlusSerializer does", async () => {
    const fast = new FastJsonPlusSerializer();
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    const lists: unknown[][] = [
      Array.from({ length: 9 }, (_, i) => ({ plain: i, nested: { list: [i, null] } })),
      [...conversation(), { when: new Date(0) }, new Map([["a", 1]]), new Set([1])],
      [...conversation(), undefined, () => 1, "text", 2],
      [...conversation(), cyclic],
      [{ first: "an object" }, 1, "two", null, undefined, 3, true, 4.5, [6]],
    ];
    for (const list of lists) {
      expect(await text(fast, list)).toBe(await text(stock, list));
      expect(await text(fast, list)).toBe(await text(stock, list));
    }
  });

  it("writes a conversation's next versions as JsonPlusSerializer does, across additions, forks and removals", async () => {
    const fast = new FastJsonPlusSerializer();
    const messages = conversation();
    const more = (id: string) => new HumanMessage({ id, content: `more ${id}` });
    const versions: unknown[][] = [
      messages,
      [...messages, more("m1")],
      [...messages, more("m1"), more("m2")],
      // A fork from the middle, then the longer branch again: each starts like the one before it.
      [...messages.slice(0, 5), more("f1")],
      [...messages, more("m1"), more("m2"), more("m3")],
      // The same first message, then fewer, then a replacement in the middle.
      messages.slice(0, 9),
      [...messages.slice(0, 4), more("r1"), ...messages.slice(5)],
      messages.slice(1),
    ];
    for (const [i, version] of versions.entries()) {
      expect(await text(fast, version), `version ${i}`).toBe(await text(stock, version));
    }
  });

  it("writes a list against the entries of its previous version as JsonPlusSerializer does", async () => {
    const fast = new FastJsonPlusSerializer();
    const joined = (texts: readonly Buffer[] | undefined) => `[${texts?.map(String).join(",")}]`;
    const messages = conversation();
    const first = fast.listTexts(messages);
    const held = first?.entries;
    expect(held).toHaveLength(messages.length);
    // Unchanged items at their places: the texts they were remembered with, the very same bytes.
    const longer = [...messages, new HumanMessage({ id: "m1", content: "more" })];
    const again = fast.listTexts(longer, held);
    expect(again?.texts.slice(0, messages.length).every((t, i) => t === first?.texts[i])).toBe(true);
    expect(joined(again?.texts)).toBe(await text(stock, longer));
    // Another object with the same class and fields at an item's place has that item's text;
    // items shifted by a removal are each checked against the entry at their new place, and miss.
    const lookalike = new HumanMessage({
      id: "h1",
      content: "question 1",
      additional_kwargs: { meta: { tags: ["a"] } },
    });
    const shifted = [...messages.slice(0, 3), lookalike, ...messages.slice(5)];
    const listed = fast.listTexts(shifted, held);
    expect(listed?.texts[3]).toBe(first?.texts[3]);
    expect(joined(listed?.texts)).toBe(await text(stock, shifted));
    expect(listed?.entries?.map((entry) => entry.loaded)).toEqual(shifted);
    // Items edited in place since: written anew, not taken for their previous entries.
    (messages[0] as HumanMessage).content = "rewritten";
    (((messages[4] as AIMessage).content as MessageContentComplex[])[0] as { text: string }).text = "edited";
    const edited = fast.listTexts(messages, held);
    expect(edited?.texts[0]).not.toBe(first?.texts[0]);
    expect(edited?.texts[4]).not.toBe(first?.texts[4]);
    expect(joined(edited?.texts)).toBe(await text(stock, messages));
  });

  it("records the items of a list only when every one is a remembered LangChain object", async () => {
    const fast = new FastJsonPlusSerializer();
    const messages = conversation();
    const [, bytes] = await fast.dumpsTyped(messages);
    const list = itemsOf(bytes);
    expect(list?.entries.map((entry) => entry.loaded)).toEqual(messages);
    expect(list?.entries.map((entry) => entry.bytes)).toEqual(list?.texts);
    // The list's bytes are the items' texts, joined.
    expect(`[${list?.texts.map(String).join(",")}]`).toBe(Buffer.from(bytes).toString());
    expect(list?.texts.map((text) => JSON.parse(String(text)).kwargs.id)).toEqual(messages.map((m) => m.id));
    const [, mixed] = await fast.dumpsTyped([...messages, { plain: true }]);
    expect(itemsOf(mixed)).toBeUndefined();
    const withDate = conversation();
    (withDate[0] as HumanMessage).additional_kwargs.when = new Date(0);
    const [, notPlain] = await fast.dumpsTyped(withDate);
    expect(itemsOf(notPlain)).toBeUndefined();
  });

  it("takes the texts of a list just checked for its leading items that are the very same objects", async () => {
    const fast = new FastJsonPlusSerializer();
    const messages = conversation();
    await fast.dumpsTyped(messages);
    const texts = rememberedTexts(messages);
    expect(texts).toBeDefined();
    const checked = { items: messages, texts: texts as Buffer[] };
    // An older state of the same answer (a history page): the first eight messages, as stored.
    const older = messages.slice(0, 8);
    (messages[2] as ToolMessage).content = "edited during the answer";
    expect(rememberedTexts(older)).toBeUndefined();
    expect(rememberedTexts(older, checked)).toEqual(texts?.slice(0, 8));
    // Past the shared objects, each item is checked as before.
    const other = [...messages.slice(0, 2), new HumanMessage({ id: "x", content: "not remembered" })];
    expect(rememberedTexts(other, checked)).toBeUndefined();
    const [, bytes] = await fast.dumpsTyped(other);
    expect(rememberedTexts(other, checked)?.map(String)).toEqual(itemsOf(bytes)?.texts.map(String));
  });

  it("remembers a list loaded from bytes, each item with its span of them, strings with brackets and all", async () => {
    const stored = conversation();
    (stored[0] as HumanMessage).content = 'a "quoted" ], {brace}, and \\ back\\slash — ✓';
    const bytes = Buffer.from((await new FastJsonPlusSerializer().dumpsTyped(stored))[1]);
    const loaded = (await new FastJsonPlusSerializer().loadsTyped("json", bytes)) as object[];
    const entries = rememberLoadedList(bytes, 1, loaded, []);
    expect(entries?.map((entry) => String(entry.bytes))).toEqual(
      await Promise.all(stored.map((message) => text(stock, message))),
    );
    expect(entries?.map((entry) => entry.loaded)).toEqual(loaded);
    expect(rememberedTexts(loaded)).toEqual(entries?.map((entry) => entry.bytes));
    // Taking the first items from a version held before: only the rest is remembered anew.
    const again = (await new FastJsonPlusSerializer().loadsTyped("json", bytes)) as object[];
    const rest = 1 + (entries?.slice(0, 4).reduce((sum, entry) => sum + entry.bytes.length + 1, 0) ?? 0);
    const shared = [...loaded.slice(0, 4), ...again.slice(4)];
    expect(rememberLoadedList(bytes, rest, shared, entries?.slice(0, 4) ?? [])?.slice(0, 4)).toEqual(
      entries?.slice(0, 4),
    );
    expect(rememberedTexts(shared)?.map(String)).toEqual(entries?.map((entry) => String(entry.bytes)));
    // Not a list of LangChain objects of plain data, or not written as the serde writes lists: nothing.
    expect(rememberLoadedList(Buffer.from('[{"a":1}]'), 1, [{ a: 1 }], [])).toBeUndefined();
    const spaced = Buffer.from(`[${entries?.map(String).join(", ")}]`);
    expect(rememberLoadedList(spaced, 1, again, [])).toBeUndefined();
  });
});
