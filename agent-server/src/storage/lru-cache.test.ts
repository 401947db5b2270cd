import { describe, expect, it } from "vitest";
import { LruCache } from "./lru-cache.ts";

describe("LruCache", () => {
  it("drops the least recently used values past its budget, by count", () => {
    const cache = new LruCache<string>(2);
    cache.set("a", "A");
    cache.set("b", "B");
    expect(cache.get("a")).toBe("A");
    cache.set("c", "C");
    expect([cache.get("a"), cache.get("b"), cache.get("c")]).toEqual(["A", undefined, "C"]);
  });

  it("weighs values when told how, keeps the newest even when it alone is over, and forgets on delete", () => {
    const cache = new LruCache<Buffer>(10, (value) => value.length);
    cache.set("small", Buffer.alloc(4));
    cache.set("again", Buffer.alloc(4));
    cache.set("again", Buffer.alloc(6));
    expect(cache.get("small")?.length).toBe(4);
    cache.set("large", Buffer.alloc(20));
    expect([cache.get("small"), cache.get("again"), cache.get("large")?.length]).toEqual([undefined, undefined, 20]);
    cache.delete("large");
    expect(cache.get("large")).toBeUndefined();
    cache.set("fits", Buffer.alloc(10));
    expect(cache.get("fits")?.length).toBe(10);
  });
});
