import { createJsonApp, errorHandler, listen, type RunningServer } from "@agentplane/common";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_JSON_LIMITS, jsonBody, jsonLimitProblem, jsonQueryLimits } from "./json-limits.ts";

const nested = (depth: number, open = "[", close = "]") => `${open.repeat(depth)}${close.repeat(depth)}`;
const nestedObject = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;
const wide = (keys: number) => `{${Array.from({ length: keys }, (_, i) => `"k${i}":${i}`).join(",")}}`;
const problem = (text: string) => jsonLimitProblem(Buffer.from(text));

describe("jsonLimitProblem", () => {
  it.each([
    ["256 nested arrays", nested(256), undefined],
    ["257 nested arrays", nested(257), "JSON is nested deeper than 256 levels"],
    ["256 nested objects", nestedObject(256), undefined],
    ["257 nested objects", nestedObject(257), "JSON is nested deeper than 256 levels"],
    ["100,000 nested arrays", nested(100_000), "JSON is nested deeper than 256 levels"],
    ["an object of 10,000 keys", wide(10_000), undefined],
    ["an object of 10,001 keys", wide(10_001), "a JSON object has more than 10000 keys"],
    ["a wide object inside an array", `[1,${wide(10_001)}]`, "a JSON object has more than 10000 keys"],
    ["an array of 50,000 items", `[${"0,".repeat(49_999)}0]`, undefined],
    [
      "brackets and colons inside strings",
      JSON.stringify({ s: `${"[{".repeat(1000)}${":".repeat(20_000)}` }),
      undefined,
    ],
    [
      "escaped quotes and backslashes",
      JSON.stringify({ s: `\\"${"[".repeat(300)}\\\\`, t: "[".repeat(300) }),
      undefined,
    ],
    ["an escaped quote before brackets", `{"s":"\\"${"[".repeat(300)}"}`, undefined],
    ["malformed: stray closers", "]]]}}}", undefined],
    ["malformed: unterminated string", `["${"[".repeat(300)}`, undefined],
    ["UTF-8 text", JSON.stringify({ ключ: "значение 🎉", [`k${"é".repeat(10)}`]: [[["ü"]]] }), undefined],
  ])("%s", (_name, text, expected) => {
    expect(problem(text)).toBe(expected);
  });

  it("counts keys per object, not per document", () => {
    const siblings = `[${Array.from({ length: 3 }, () => wide(DEFAULT_JSON_LIMITS.maxKeys)).join(",")}]`;
    expect(problem(siblings)).toBeUndefined();
    expect(problem(`{"a":${wide(9_999)},"b":1,"c":2}`)).toBeUndefined();
  });

  it("scans a 10 MB body in well under a second", () => {
    const body = Buffer.from(
      JSON.stringify({ items: Array.from({ length: 100_000 }, (_, i) => ({ i, s: "x".repeat(80) })) }),
    );
    const started = performance.now();
    expect(jsonLimitProblem(body)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(1000);
  });
});

describe("jsonBody and jsonQueryLimits", () => {
  let server: RunningServer;

  beforeAll(async () => {
    const app = createJsonApp({ parseJson: false });
    app.use(jsonBody("10mb"), jsonQueryLimits());
    app.all("/echo", (req, res) => {
      res.json({ body: req.body ?? null });
    });
    app.use(errorHandler(pino({ level: "silent" })));
    server = await listen(app, 0);
  });
  afterAll(async () => {
    await server?.close(0);
  });

  const post = (body: string, contentType = "application/json") =>
    fetch(`${server.url}/echo`, { method: "POST", headers: { "content-type": contentType }, body });

  it("parses JSON within the limits", async () => {
    const response = await post(JSON.stringify({ a: [1, { b: 2 }] }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ body: { a: [1, { b: 2 }] } });
  });

  it.each([
    ["deep", nested(5_000), "JSON is nested deeper than 256 levels"],
    ["wide", wide(40_000), "a JSON object has more than 10000 keys"],
  ])("refuses %s JSON with 422 before parsing it", async (_name, body, msg) => {
    const response = await post(body);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({ detail: [{ loc: ["body"], msg, type: "json_too_complex" }] });
  });

  it("checks bodies in other UTF charsets after decoding them", async () => {
    const text = nested(300);
    const utf16 = Buffer.from(`\ufeff${text}`, "utf16le");
    const response = await fetch(`${server.url}/echo`, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-16le" },
      body: utf16,
    });
    expect(response.status).toBe(422);
  });

  it("keeps answering malformed JSON with 422 json_invalid", async () => {
    const response = await post('{"a":');
    expect(response.status).toBe(422);
    expect(((await response.json()) as { detail: { type: string }[] }).detail[0]?.type).toBe("json_invalid");
  });

  it("refuses deep JSON in a query parameter at that parameter", async () => {
    const response = await fetch(`${server.url}/echo?stream_mode=${encodeURIComponent(nested(1000))}`);
    expect(response.status).toBe(422);
    expect(await response.json()).toEqual({
      detail: [
        { loc: ["query", "stream_mode"], msg: "JSON is nested deeper than 256 levels", type: "json_too_complex" },
      ],
    });
    expect((await fetch(`${server.url}/echo?stream_mode=${encodeURIComponent('["values"]')}`)).status).toBe(200);
  });
});
