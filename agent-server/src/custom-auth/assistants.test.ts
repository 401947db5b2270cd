import { createLogger } from "@agentplane/common";
import { Auth } from "@langchain/langgraph-sdk/auth";
import { beforeEach, describe, expect, it } from "vitest";
import { AssistantService } from "../assistants/service.ts";
import { loadConfig } from "../config.ts";
import { fixtureConfig } from "../graphs/testing/server.ts";
import { createMemoryStorage } from "../storage/memory.ts";
import { echoGraphRegistry } from "../storage/testing/api-server.ts";
import { ThreadService } from "../threads/service.ts";
import { normalizeUser, type ProjectAuth, RequestAuth } from "./authorize.ts";

/** The owner model (stamp `metadata.owner`, filter on it) for one user. */
const ownerAuth = (identity: string) =>
  new RequestAuth(
    normalizeUser(identity),
    new Auth().on("*", ({ value, user }) => {
      if ("metadata" in value) value.metadata = { ...value.metadata, owner: user.identity };
      return { owner: user.identity };
    }) as unknown as ProjectAuth,
  );

/** Assistant versions under custom auth: the `assistants:read` filter applies to each version, as on the reference. */
describe("assistant versions under custom auth", () => {
  let assistants: AssistantService;
  const page = { limit: 10, offset: 0 };
  const alice = ownerAuth("alice");
  const bob = ownerAuth("bob");

  beforeEach(() => {
    const storage = createMemoryStorage();
    const ctx = {
      config: loadConfig(["dev", "--config", fixtureConfig], {}),
      storage,
      graphs: echoGraphRegistry(storage),
      logger: createLogger("custom-auth-assistants", "silent"),
    };
    const threads = new ThreadService(ctx);
    assistants = new AssistantService(ctx, () => threads);
  });

  it("lists a user's versions of their own assistant; another user's attempt is a 404", async () => {
    const created = await assistants.create({ graph_id: "agent", name: "v1" }, alice);
    await assistants.patch(created.assistant_id, { name: "v2" }, alice);
    const versions = await assistants.versions(created.assistant_id, page, alice);
    expect(versions.map((version) => [version.version, version.name, version.metadata.owner])).toEqual([
      [2, "v2", "alice"],
      [1, "v1", "alice"],
    ]);
    await expect(assistants.versions(created.assistant_id, page, bob)).rejects.toMatchObject({ status: 404 });
    await expect(assistants.versions(created.assistant_id, { ...page, offset: 5 }, alice)).rejects.toMatchObject({
      status: 404,
    });
  });

  it("filters each version by its own metadata, not the current one's", async () => {
    // Made by the server (no user, no owner), then handed to Alice by a patch outside any user's request.
    const created = await assistants.create({ graph_id: "agent", name: "system" });
    await assistants.patch(created.assistant_id, { name: "alice's", metadata: { owner: "alice" } });
    const mine = await assistants.versions(created.assistant_id, page, alice);
    expect(mine.map((version) => version.version)).toEqual([2]);
    await expect(assistants.versions(created.assistant_id, page, bob)).rejects.toMatchObject({ status: 404 });
    // Without custom auth every version shows, and an empty page of a known assistant is no 404.
    expect((await assistants.versions(created.assistant_id, page)).map((version) => version.version)).toEqual([2, 1]);
    expect(await assistants.versions(created.assistant_id, { ...page, offset: 5 })).toEqual([]);
    await expect(assistants.versions("00000000-0000-4000-8000-000000000000", page)).rejects.toMatchObject({
      status: 404,
    });
  });
});
