import { describe, expect, it } from "vitest";
import { clusterSnapshot, expectRefusal, type Harness, listenerBody } from "../testing/harness.ts";
import { useHarness } from "../testing/suite.ts";

/** Listeners' endpoints answering malformed queries, bodies and ids with a JSON 4xx, writing nothing. */
let h: Harness;
useHarness((started) => ({ h } = started));

describe("bad input", () => {
  let registered: { id: string };
  const cases: { name: string; method: string; path: () => string; body?: unknown; status: number; loc?: unknown[] }[] =
    [
      {
        name: "list limit 0",
        method: "GET",
        path: () => "/v2/listeners?limit=0",
        status: 422,
        loc: ["query", "limit"],
      },
      {
        name: "list limit 101",
        method: "GET",
        path: () => "/v2/listeners?limit=101",
        status: 422,
        loc: ["query", "limit"],
      },
      {
        name: "list offset -1",
        method: "GET",
        path: () => "/v2/listeners?offset=-1",
        status: 422,
        loc: ["query", "offset"],
      },
      {
        name: "list offset text",
        method: "GET",
        path: () => "/v2/listeners?offset=x",
        status: 422,
        loc: ["query", "offset"],
      },
      {
        name: "create without body",
        method: "POST",
        path: () => "/v2/listeners",
        status: 422,
        loc: ["body", "compute_type"],
      },
      {
        name: "create with another compute_type",
        method: "POST",
        path: () => "/v2/listeners",
        body: { ...listenerBody("c1"), compute_type: "ecs" },
        status: 422,
        loc: ["body", "compute_type"],
      },
      {
        name: "create without compute_id",
        method: "POST",
        path: () => "/v2/listeners",
        body: { ...listenerBody("c1"), compute_id: undefined },
        status: 422,
        loc: ["body", "compute_id"],
      },
      {
        name: "create with empty compute_id",
        method: "POST",
        path: () => "/v2/listeners",
        body: listenerBody(""),
        status: 422,
        loc: ["body", "compute_id"],
      },
      {
        name: "create with whitespace in compute_id",
        method: "POST",
        path: () => "/v2/listeners",
        body: listenerBody("my cluster"),
        status: 422,
        loc: ["body", "compute_id"],
      },
      {
        name: "create without compute_config",
        method: "POST",
        path: () => "/v2/listeners",
        body: { ...listenerBody("c1"), compute_config: undefined },
        status: 422,
        loc: ["body", "compute_config"],
      },
      {
        name: "create with a namespace that is no DNS label",
        method: "POST",
        path: () => "/v2/listeners",
        body: listenerBody("c1", ["Bad_NS"]),
        status: 422,
        loc: ["body", "compute_config", "k8s_namespaces", 0],
      },
      {
        name: "create with namespaces not a list",
        method: "POST",
        path: () => "/v2/listeners",
        body: { ...listenerBody("c1"), compute_config: { k8s_namespaces: "apps" } },
        status: 422,
        loc: ["body", "compute_config", "k8s_namespaces"],
      },
      {
        name: "create with duplicate namespaces",
        method: "POST",
        path: () => "/v2/listeners",
        body: listenerBody("c1", ["apps", "apps"]),
        status: 422,
        loc: ["body", "compute_config", "k8s_namespaces"],
      },
      {
        name: "create with a numeric version",
        method: "POST",
        path: () => "/v2/listeners",
        body: { ...listenerBody("c1"), version: 2 },
        status: 422,
        loc: ["body", "version"],
      },
      {
        name: "get a non-UUID id",
        method: "GET",
        path: () => "/v2/listeners/l-1",
        status: 422,
        loc: ["path", "listener_id"],
      },
      { name: "get an unknown id", method: "GET", path: () => `/v2/listeners/${crypto.randomUUID()}`, status: 404 },
      {
        name: "patch a non-UUID id",
        method: "PATCH",
        path: () => "/v2/listeners/l-1",
        body: {},
        status: 422,
        loc: ["path", "listener_id"],
      },
      {
        name: "patch with a bad namespace",
        method: "PATCH",
        path: () => `/v2/listeners/${registered.id}`,
        body: { compute_config: { k8s_namespaces: ["-x"] } },
        status: 422,
        loc: ["body", "compute_config", "k8s_namespaces", 0],
      },
      {
        name: "patch with an empty version",
        method: "PATCH",
        path: () => `/v2/listeners/${registered.id}`,
        body: { version: "" },
        status: 422,
        loc: ["body", "version"],
      },
      {
        name: "patch an unknown id",
        method: "PATCH",
        path: () => `/v2/listeners/${crypto.randomUUID()}`,
        body: { version: "1" },
        status: 404,
      },
      {
        name: "delete a non-UUID id",
        method: "DELETE",
        path: () => "/v2/listeners/x",
        status: 422,
        loc: ["path", "listener_id"],
      },
      {
        name: "delete an unknown id",
        method: "DELETE",
        path: () => `/v2/listeners/${crypto.randomUUID()}`,
        status: 404,
      },
    ];

  it("registers the listener the cases patch", async () => {
    registered = (
      await h.api("POST", "/v2/listeners", {
        body: listenerBody("bad-input-target"),
      })
    ).body;
    expect(registered.id).toEqual(expect.any(String));
  });

  it.each(cases)("$name → $status, nothing written", async (c) => {
    const before = await clusterSnapshot(h.cluster);
    const res = await h.api(c.method, c.path(), { body: c.body });
    expectRefusal(res, c.status, c.loc);
    expect(await clusterSnapshot(h.cluster)).toEqual(before);
  });
});
