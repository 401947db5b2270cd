import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { copyFields, holdsCopy } from "./shapes.ts";

const message = () =>
  new AIMessage({
    id: "a1",
    content: [{ type: "text", text: "answer" }],
    tool_calls: [{ id: "t1", name: "search", args: { q: "x", page: 2 } }],
    additional_kwargs: { meta: { tags: ["a", "b"] } },
  });

describe("copies of plain data and their checks", () => {
  it("holds while nothing changed, and notices every kind of edit in place", () => {
    const edits: [string, (m: AIMessage) => void][] = [
      ["a field replaced", (m) => (m.id = "other")],
      ["a field added", (m) => (m.name = "named")],
      ["a field removed", (m) => delete (m as { id?: string }).id],
      ["a leaf of a nested object", (m) => ((m.additional_kwargs.meta as { tags: string[] }).tags[1] = "c")],
      ["an item added to a nested list", (m) => (m.additional_kwargs.meta as { tags: string[] }).tags.push("c")],
      [
        "a nested object's keys reordered",
        (m) => (m.tool_calls = [{ args: { q: "x", page: 2 }, id: "t1", name: "search" }]),
      ],
      ["a plain object replaced by a class instance", (m) => (m.additional_kwargs.meta = new Date(0) as never)],
      ["a list replaced by an object", (m) => (m.additional_kwargs.meta = { tags: { 0: "a", 1: "b" } })],
      ["a kwargs entry no longer its field", (m) => (m.lc_kwargs.content = "different")],
      ["a number replaced by its text", (m) => ((m.tool_calls?.[0]?.args as { page: unknown }).page = "2")],
    ];
    for (const [edit, apply] of edits) {
      const live = message();
      const copy = copyFields(live);
      if (!copy) throw new Error("not copied");
      expect(holdsCopy(live, copy), `${edit}: before`).toBe(true);
      apply(live);
      expect(holdsCopy(live, copy), edit).toBe(false);
    }
  });

  it("holds when a kwargs entry is an equal copy of its field rather than the field itself", () => {
    const live = message();
    const copy = copyFields(live);
    if (!copy) throw new Error("not copied");
    live.lc_kwargs.content = structuredClone(live.content);
    expect(holdsCopy(live, copy)).toBe(true);
  });

  it("shares a layout between objects of the same layout, whatever their values", () => {
    const one = copyFields(new HumanMessage({ id: "h1", content: "one" }));
    const two = copyFields(new HumanMessage({ id: "h2", content: "two, longer" }));
    expect(one?.shape).toBe(two?.shape);
    expect(one?.leaves).not.toEqual(two?.leaves);
  });

  it("compiles keys that look like code as the keys they are", () => {
    const keys = ['"]; throw new Error("ran"); //', "a\nb", "\u2028", "constructor", "__proto__x", "0", "`${x}`"];
    const kwargs = Object.fromEntries(keys.map((key, i) => [key, i]));
    const live = new HumanMessage({ id: "h1", content: "hi", additional_kwargs: kwargs });
    const copy = copyFields(live);
    if (!copy) throw new Error("not copied");
    expect(holdsCopy(live, copy)).toBe(true);
    live.additional_kwargs['"]; throw new Error("ran"); //'] = 99;
    expect(holdsCopy(live, copy)).toBe(false);
  });

  it("does not copy what is not plain data", () => {
    expect(copyFields(new HumanMessage({ id: "h1", content: "hi", additional_kwargs: { at: new Date(0) } }))).toBe(
      undefined,
    );
  });

  it("forgets the least recently used layouts past its bound, and copies made with them still check", () => {
    const early = new HumanMessage({ id: "h1", content: "early" });
    const earlyCopy = copyFields(early);
    for (let i = 0; i < 5000; i++) expect(copyFields({ [`key${i}`]: i })).toBeDefined();
    const later = copyFields(new HumanMessage({ id: "h2", content: "later" }));
    if (!earlyCopy || !later) throw new Error("not copied");
    expect(later.shape).not.toBe(earlyCopy.shape);
    expect(holdsCopy(early, earlyCopy)).toBe(true);
    early.content = "edited";
    expect(holdsCopy(early, earlyCopy)).toBe(false);
  });
});
