import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { lazyRequest } from "./request.ts";

/** What `authenticate` is handed must behave as a `Request` in every way a handler may use one. */
describe("the request handed to authenticate", () => {
  const make = () =>
    lazyRequest(
      "POST",
      "http://127.0.0.1:8000/threads/search?x=1",
      new Headers({ authorization: "Bearer t", "x-tenant": "red" }),
    );

  it("is a Request with the method, URL and headers", () => {
    const request = make();
    expect(request).toBeInstanceOf(Request);
    expect(request.method).toBe("POST");
    expect(request.url).toBe("http://127.0.0.1:8000/threads/search?x=1");
    expect(new URL(request.url).pathname).toBe("/threads/search");
    expect(request.headers.get("authorization")).toBe("Bearer t");
    expect(Object.prototype.toString.call(request)).toBe("[object Request]");
  });

  it("answers every other Request member as a Request built from the same parts", async () => {
    const request = make();
    expect(request.signal).toBeInstanceOf(AbortSignal);
    expect(request.bodyUsed).toBe(false);
    expect(request.mode).toBe("cors");
    expect(await request.text()).toBe("");
    const copy = request.clone();
    expect(copy).toBeInstanceOf(Request);
    expect([copy.method, copy.url, copy.headers.get("x-tenant")]).toEqual([
      "POST",
      "http://127.0.0.1:8000/threads/search?x=1",
      "red",
    ]);
    expect(() => inspect(request)).not.toThrow();
  });
});
