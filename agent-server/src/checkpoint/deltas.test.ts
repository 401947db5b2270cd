import { describe, expect, it } from "vitest";
import {
  appendedDelta,
  applyChain,
  bytesOf,
  commonPrefix,
  commonSuffix,
  deltaAgainst,
  type KnownVersion,
  KnownVersions,
  MAX_CHAIN,
  MIN_DELTA_BYTES,
} from "./deltas.ts";
import type { Known } from "./message-texts.ts";
import { copyFields, type FieldsCopy } from "./shapes.ts";

const known = (text: string, depth = 0, chainBytes = 0): KnownVersion => ({
  field: "messages\n1.5",
  type: "json",
  bytes: Buffer.from(text),
  size: Buffer.byteLength(text),
  depth,
  chainBytes,
});

const messages = (count: number, edit?: (i: number) => string | undefined) =>
  JSON.stringify(
    Array.from({ length: count }, (_, i) => edit?.(i) ?? `message ${i} ${"words ".repeat(20)}`).filter(
      (text) => text !== "",
    ),
  );

/** `next` through a delta against `base` and back. */
function roundTrip(base: string, next: string) {
  const delta = deltaAgainst(known(base), "json", Buffer.from(next));
  if (!delta) return undefined;
  expect(applyChain(Buffer.from(base), [delta]).toString()).toBe(next);
  return delta;
}

describe("channel value deltas", () => {
  it("finds common prefixes and suffixes across chunk boundaries", () => {
    const a = Buffer.from(`${"x".repeat(1000)}A${"y".repeat(700)}`);
    const b = Buffer.from(`${"x".repeat(1000)}B${"y".repeat(700)}`);
    expect(commonPrefix(a, b)).toBe(1000);
    expect(commonSuffix(a, b, a.length - 1000)).toBe(700);
    expect(commonPrefix(a, a)).toBe(a.length);
    expect(commonSuffix(a, Buffer.from("zy"), 2)).toBe(1);
  });

  it("finds them as a byte-by-byte walk does, for lengths around the halving's boundaries", () => {
    const walkPrefix = (a: Buffer, b: Buffer) => {
      let i = 0;
      while (i < Math.min(a.length, b.length) && a[i] === b[i]) i++;
      return i;
    };
    const walkSuffix = (a: Buffer, b: Buffer, limit: number) => {
      let n = 0;
      while (n < limit && a[a.length - n - 1] === b[b.length - n - 1]) n++;
      return n;
    };
    let seed = 7;
    const random = (below: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % below;
    };
    for (let trial = 0; trial < 300; trial++) {
      const shared = Buffer.from(Array.from({ length: random(3000) }, () => 97 + random(3)));
      const tail = Buffer.from(Array.from({ length: random(1500) }, () => 97 + random(3)));
      const a = Buffer.concat([shared, Buffer.from(Array.from({ length: random(600) }, () => 97 + random(3))), tail]);
      const b = Buffer.concat([shared, Buffer.from(Array.from({ length: random(600) }, () => 97 + random(3))), tail]);
      const prefix = commonPrefix(a, b);
      expect(prefix).toBe(walkPrefix(a, b));
      const limit = Math.min(a.length, b.length) - prefix;
      expect(commonSuffix(a, b, limit)).toBe(walkSuffix(a, b, limit));
    }
  });

  it("stores an appended message as that message, whatever the list's length", () => {
    const delta = roundTrip(messages(1000), messages(1001));
    expect(delta?.payload.length).toBeLessThan(200);
    expect(delta?.header.base).toBe("messages\n1.5");
  });

  it("rebuilds removals and replacements in the middle of a list", () => {
    roundTrip(
      messages(300),
      messages(300, (i) => (i === 150 ? "" : undefined)),
    );
    const replaced = roundTrip(
      messages(300),
      messages(300, (i) => (i === 150 ? "edited" : undefined)),
    );
    expect(replaced?.payload.length).toBeLessThan(50);
  });

  it("finds an appended list's delta from its items' texts, as deltaAgainst finds it from the bytes", () => {
    const texts = Array.from({ length: 30 }, (_, i) =>
      Buffer.from(JSON.stringify({ id: i, text: "words ".repeat(10) })),
    );
    const held = texts.slice(0, 28);
    const size = Buffer.byteLength(`[${held.map(String).join(",")}]`);
    // No bytes: they are joined from the texts when something needs them.
    const base: KnownVersion = { field: "messages\n1", type: "json", itemTexts: held, size, depth: 3, chainBytes: 100 };
    const next = [...texts.slice(0, 28), ...texts.slice(28)];
    const appended = appendedDelta(base, next);
    if (!appended) throw new Error("no delta");
    const whole = Buffer.from(`[${texts.map(String).join(",")}]`);
    expect(appended.size).toBe(whole.length);
    expect(applyChain(bytesOf(base), [appended]).equals(whole)).toBe(true);
    expect(appended).toEqual({ ...deltaAgainst(base, "json", whole), size: whole.length });
    // The same list again: an empty delta.
    expect(applyChain(bytesOf(base), [appendedDelta(base, texts.slice(0, 28)) as never]).equals(bytesOf(base))).toBe(
      true,
    );
  });

  it("finds no appended delta when the list does not start with the base's very texts, or a full copy is due", () => {
    const texts = Array.from({ length: 30 }, (_, i) => Buffer.from(`"message ${i} ${"words ".repeat(10)}"`));
    const base = (depth = 0): KnownVersion => ({
      field: "m\n1",
      type: "json",
      itemTexts: texts.slice(0, 20),
      size: 1500,
      depth,
      chainBytes: 0,
    });
    expect(appendedDelta(base(), texts.slice(0, 19))).toBeUndefined();
    const replaced = [...texts.slice(0, 5), Buffer.from(String(texts[5])), ...texts.slice(6)];
    expect(appendedDelta(base(), replaced)).toBeUndefined();
    expect(appendedDelta(base(MAX_CHAIN), texts)).toBeUndefined();
    expect(appendedDelta({ ...base(), itemTexts: undefined, bytes: Buffer.from("[]") }, texts)).toBeUndefined();
    expect(appendedDelta(base(), texts)).toBeDefined();
  });

  it("rebuilds a chain of deltas, oldest first", () => {
    let value = messages(50);
    const full = Buffer.from(value);
    const chain = [];
    for (let i = 0; i < 20; i++) {
      const next =
        i % 3 === 2 ? messages(50 + i, (j) => (j === 10 + i ? `changed ${i}` : undefined)) : messages(51 + i);
      const delta = deltaAgainst(known(value), "json", Buffer.from(next));
      if (!delta) throw new Error("expected a delta");
      chain.push(delta);
      value = next;
    }
    expect(applyChain(full, chain).toString()).toBe(value);
  });

  it("writes a full copy when the delta is not smaller, the type changes or the chain is long", () => {
    expect(deltaAgainst(known("abc"), "json", Buffer.from("xyz"))).toBeUndefined();
    expect(deltaAgainst(known(messages(100)), "bytes", Buffer.from(messages(101)))).toBeUndefined();
    expect(deltaAgainst(known(messages(100), MAX_CHAIN), "json", Buffer.from(messages(101)))).toBeUndefined();
    const value = messages(100);
    expect(deltaAgainst(known(value, 3, value.length + 100), "json", Buffer.from(messages(101)))).toBeUndefined();
    expect(deltaAgainst(known(value, MAX_CHAIN - 1, 100), "json", Buffer.from(messages(101)))).toBeDefined();
  });

  it("keeps the most recently used versions within its byte and entry budgets", () => {
    const value = (size: number) => known("x".repeat(size));
    const versions = new KnownVersions(16_000, 3);
    versions.set("s", "a", value(3600));
    versions.set("s", "b", value(3600));
    versions.get("s", "a");
    versions.set("s", "c", value(3600));
    versions.set("s", "d", value(3600));
    expect(versions.get("s", "b")).toBeUndefined();
    expect(versions.get("s", "a")).toBeDefined();
    versions.set("s", "e", value(3600));
    expect(versions.get("s", "c")).toBeUndefined();
    expect(versions.get("s", "e")).toBeDefined();
    // Neither a value too large for a quarter of the budget nor one too small for deltas is kept.
    versions.set("s", "a", value(4001));
    expect(versions.get("s", "a")).toBeUndefined();
    versions.set("s", "a", value(MIN_DELTA_BYTES - 1));
    expect(versions.get("s", "a")).toBeUndefined();
  });

  it("keeps full copies for reads of the scope, least recently used out past half its byte budget", () => {
    const copy = (field: string, depth = 0): KnownVersion => ({ ...known("x".repeat(3000), depth), field });
    // 12,000 bytes for copies, none over 3,000.
    const versions = new KnownVersions(24_000, 10);
    versions.set("s", "messages", { ...known("y".repeat(2000), 3), field: "messages\n9" });
    versions.keepFullCopy("s", copy("messages\n1"));
    versions.keepFullCopy("s", copy("messages\n2"));
    versions.keepFullCopy("s", copy("messages\n3", 1));
    versions.keepFullCopy("s", { ...known("x".repeat(3001)), field: "messages\n3" });
    versions.keepFullCopy("t", copy("messages\n4"));
    // The latest version of a channel comes first: a read takes it as the one it holds.
    expect([...versions.inScope("s").keys()]).toEqual(["messages\n9", "messages\n1", "messages\n2"]);
    expect([...versions.inScope("t").keys()]).toEqual(["messages\n4"]);
    versions.keepFullCopy("s", copy("messages\n1"));
    versions.keepFullCopy("t", copy("messages\n5"));
    versions.keepFullCopy("t", copy("messages\n6"));
    // Over budget: the least recently kept or used goes.
    expect([...versions.inScope("s").keys()]).toEqual(["messages\n9", "messages\n1"]);
    expect([...versions.inScope("t").keys()]).toEqual(["messages\n4", "messages\n5", "messages\n6"]);
    expect(versions.inScope("s").get("messages\n1")?.bytes?.toString()).toBe("x".repeat(3000));
  });

  it("keeps the decoded items of the most recently used versions within their heap budget", () => {
    // Items are counted at 7 bytes of heap per serialised byte: 28,000 bytes hold two such versions.
    const versions = new KnownVersions(16_000, 10, 2 * 7 * 2000);
    const entry = (field: string): Known => {
      const loaded = { field };
      return {
        bytes: Buffer.from(JSON.stringify(loaded)),
        type: Object,
        loaded,
        ...(copyFields(loaded) as FieldsCopy),
      };
    };
    const withItems = (field: string) => ({ ...known("x".repeat(2000)), field, entries: [entry(field)] });
    const itemsOf = (field: string) => versions.get("s", field)?.entries?.map((held) => held.loaded);
    versions.set("s", "a", withItems("a"));
    versions.set("s", "b", withItems("b"));
    versions.get("s", "a");
    versions.set("s", "c", withItems("c"));
    // "b" is the least recently used: it keeps its bytes, as a delta base and to read from.
    expect(itemsOf("b")).toBeUndefined();
    expect(versions.get("s", "b")?.bytes?.length).toBe(2000);
    expect(itemsOf("a")).toEqual([{ field: "a" }]);
    expect(itemsOf("c")).toEqual([{ field: "c" }]);
    // Dropping items (they changed since) frees their share of the budget.
    versions.dropItems(versions.get("s", "a") as KnownVersion);
    versions.set("s", "d", withItems("d"));
    expect(itemsOf("c")).toBeDefined();
    expect(itemsOf("d")).toBeDefined();
    expect([...versions.inScope("s").keys()].sort()).toEqual(["a", "b", "c", "d"]);
  });

  it("writes small values as full copies", () => {
    const small = JSON.stringify(["x".repeat(MIN_DELTA_BYTES / 2)]);
    const bigger = JSON.stringify(["x".repeat(MIN_DELTA_BYTES / 2), "y"]);
    expect(deltaAgainst(known(small), "json", Buffer.from(bigger))).toBeUndefined();
  });
});
