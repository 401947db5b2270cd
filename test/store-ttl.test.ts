import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ExtensionTestServer,
  startExtensionServer,
  storeTtlFixtureConfig,
} from "../agent-server/src/store-api/testing/server.ts";
import { testRedisUrl, uniquePrefix } from "./support/redis.ts";

/** `store.ttl` in `langgraph.json` sets the long-term store's defaults, on both storages. */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each([
  ["Redis", () => testRedisUrl()],
  ["in-memory", () => undefined],
])("store.ttl from langgraph.json on %s storage", (_kind, redisUrl) => {
  let app: ExtensionTestServer;

  beforeAll(async () => {
    app = await startExtensionServer(redisUrl(), {
      prefix: uniquePrefix("store-ttl"),
      configPath: storeTtlFixtureConfig,
    });
  });
  afterAll(() => app?.close());

  it("expires items put without a TTL after default_ttl, and reads do not extend them", async () => {
    const { store } = app.client;
    await store.putItem(["notes"], "default", { text: "goes" });
    await store.putItem(["notes"], "forever", { text: "stays" }, { ttl: null });
    expect(await store.getItem(["notes"], "default")).toMatchObject({ value: { text: "goes" } });

    // With refresh_on_read this read would move the expiry to 1.8 s; without, it stays at 1.2 s.
    await sleep(600);
    expect(await store.getItem(["notes"], "default")).not.toBeNull();
    await sleep(1000);
    expect(await store.getItem(["notes"], "default")).toBeNull();
    expect((await store.searchItems(["notes"])).items.map((item) => item.key)).toEqual(["forever"]);
  });
});
