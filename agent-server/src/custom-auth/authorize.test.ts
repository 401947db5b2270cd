import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";
import { describe, expect, it } from "vitest";
import {
  AuthRejection,
  isProjectAuth,
  matchesAuthFilter,
  mergeAuthFilter,
  normalizeUser,
  type ProjectAuth,
  RequestAuth,
} from "./authorize.ts";

const alice = normalizeUser({ identity: "alice", permissions: ["read"], tier: "gold" });
const asProject = (auth: Auth) => auth as unknown as ProjectAuth;

describe("normalizeUser", () => {
  it("turns a string into an authenticated user with that identity", () => {
    expect(normalizeUser("bob")).toEqual({
      identity: "bob",
      display_name: "bob",
      is_authenticated: true,
      permissions: [],
    });
  });

  it("keeps extra fields and fills display_name and is_authenticated", () => {
    expect(alice).toEqual({
      identity: "alice",
      display_name: "alice",
      is_authenticated: true,
      permissions: ["read"],
      tier: "gold",
    });
    expect(normalizeUser({ identity: "x", is_authenticated: false, display_name: "X" })).toMatchObject({
      is_authenticated: false,
      display_name: "X",
      permissions: [],
    });
  });

  it("refuses a result without a string identity with a 401", () => {
    expect(() => normalizeUser({ id: 1 })).toThrow(AuthRejection);
    expect(() => normalizeUser(undefined)).toThrow(expect.objectContaining({ status: 401 }));
  });
});

describe("AuthRejection.from", () => {
  it("keeps an HTTPException's status, message and headers", () => {
    const rejection = AuthRejection.from(
      new HTTPException(403, { message: "nope", headers: { "WWW-Authenticate": "Bearer" } }),
    );
    expect(rejection).toMatchObject({ status: 403, detail: "nope", headers: { "WWW-Authenticate": "Bearer" } });
  });

  it("makes anything else a 401", () => {
    expect(AuthRejection.from(new TypeError("boom"))).toMatchObject({ status: 401, detail: "Unauthorized" });
    expect(AuthRejection.from("a string")).toMatchObject({ status: 401 });
  });
});

describe("RequestAuth.authorize", () => {
  it("calls the most specific handler: resource:action, resource, *:action, *", async () => {
    const calls: string[] = [];
    const auth = new Auth()
      .on("*", () => {
        calls.push("*");
      })
      .on("*:read", () => {
        calls.push("*:read");
      })
      .on("threads", () => {
        calls.push("threads");
      })
      .on("threads:read", () => {
        calls.push("threads:read");
      });
    const request = new RequestAuth(alice, asProject(auth));
    await request.authorize("threads:read", {});
    await request.authorize("threads:delete", {});
    await request.authorize("assistants:read", {});
    await request.authorize("store:put", {});
    expect(calls).toEqual(["threads:read", "threads", "*:read", "*"]);
  });

  it("passes event, resource, action, value, user and permissions; a handler may change the value", async () => {
    const auth = new Auth().on("threads:create", (parameter) => {
      expect(parameter).toMatchObject({
        event: "threads:create",
        resource: "threads",
        action: "create",
        user: alice,
        permissions: ["read"],
      });
      parameter.value.metadata ??= {};
      parameter.value.metadata.owner = parameter.user.identity;
      return { owner: parameter.user.identity };
    });
    const value: { metadata?: Record<string, unknown> } = {};
    expect(await new RequestAuth(alice, asProject(auth)).authorize("threads:create", value)).toEqual({
      owner: "alice",
    });
    expect(value.metadata).toEqual({ owner: "alice" });
  });

  it("treats undefined, null and true as allowed without a filter, false as 403", async () => {
    for (const [result, filter] of [
      [undefined, undefined],
      [null, undefined],
      [true, undefined],
    ] as const) {
      const auth = new RequestAuth(alice, asProject(new Auth().on("*", () => result as never)));
      expect(await auth.authorize("threads:read", {})).toBe(filter);
    }
    const denying = new RequestAuth(alice, asProject(new Auth().on("*", () => false)));
    await expect(denying.authorize("threads:read", {})).rejects.toMatchObject({ status: 403 });
  });

  it("turns an HTTPException into its status and any other throw into a 401", async () => {
    const teapot = new RequestAuth(
      alice,
      asProject(
        new Auth().on("*", () => {
          throw new HTTPException(418, { message: "teapot" });
        }),
      ),
    );
    await expect(teapot.authorize("threads:read", {})).rejects.toMatchObject({ status: 418, detail: "teapot" });
    const broken = new RequestAuth(
      alice,
      asProject(
        new Auth().on("*", () => {
          throw new Error("bug in the handler");
        }),
      ),
    );
    await expect(broken.authorize("threads:read", {})).rejects.toMatchObject({ status: 401 });
  });

  it("recognises an Auth by shape", () => {
    expect(isProjectAuth(new Auth())).toBe(true);
    expect(isProjectAuth({ authenticate() {} })).toBe(false);
    expect(isProjectAuth(undefined)).toBe(false);
  });
});

describe("matchesAuthFilter", () => {
  const metadata = { owner: "alice", tags: ["a", "b"], zero: 0 };

  it("compares plain values and $eq strictly", () => {
    expect(matchesAuthFilter(metadata, { owner: "alice" })).toBe(true);
    expect(matchesAuthFilter(metadata, { owner: "bob" })).toBe(false);
    expect(matchesAuthFilter(metadata, { owner: { $eq: "alice" } })).toBe(true);
    expect(matchesAuthFilter(metadata, { zero: { $eq: 0 } })).toBe(true);
    expect(matchesAuthFilter(metadata, { zero: { $eq: "" } })).toBe(false);
    expect(matchesAuthFilter(undefined, { owner: "alice" })).toBe(false);
    expect(matchesAuthFilter(metadata, undefined)).toBe(true);
  });

  it("checks $contains against arrays, one value or all of several", () => {
    expect(matchesAuthFilter(metadata, { tags: { $contains: "a" } })).toBe(true);
    expect(matchesAuthFilter(metadata, { tags: { $contains: ["a", "b"] } })).toBe(true);
    expect(matchesAuthFilter(metadata, { tags: { $contains: ["a", "c"] } })).toBe(false);
    expect(matchesAuthFilter(metadata, { owner: { $contains: "a" } })).toBe(false);
  });

  it("matches nothing for an operator it does not know", () => {
    expect(matchesAuthFilter(metadata, { owner: { $ne: "bob" } })).toBe(false);
  });
});

describe("mergeAuthFilter", () => {
  it("moves equalities into the metadata containment and leaves $contains to check per record", () => {
    expect(mergeAuthFilter({ kind: "chat" }, { owner: "alice", team: { $eq: 7 }, tags: { $contains: "a" } })).toEqual({
      metadata: { kind: "chat", owner: "alice", team: 7 },
      residual: { tags: { $contains: "a" } },
    });
  });

  it("is undefined when the query and the filter cannot both hold", () => {
    expect(mergeAuthFilter({ owner: "bob" }, { owner: "alice" })).toBeUndefined();
    expect(mergeAuthFilter(undefined, { owner: { $eq: { nested: 1 } } })).toBeUndefined();
    expect(mergeAuthFilter({ owner: "alice" }, { owner: "alice" })).toEqual({
      metadata: { owner: "alice" },
      residual: undefined,
    });
  });
});
