import { describe, expect, it } from "vitest";
import { toApiCall } from "./rbac-recording.ts";

describe("RBAC attributes of requests", () => {
  it("maps REST requests to RBAC attributes like the API server", () => {
    expect(toApiCall("GET", "/apis/apps/v1/namespaces/a/deployments/x")).toEqual({
      verb: "get",
      group: "apps",
      resource: "deployments",
      namespace: "a",
      name: "x",
    });
    expect(toApiCall("GET", "/apis/apps/v1/deployments?watch=true")).toEqual({
      verb: "watch",
      group: "apps",
      resource: "deployments",
    });
    expect(toApiCall("PUT", "/apis/agentplane.dev/v1alpha1/namespaces/a/agentrevisions/r/status")).toEqual({
      verb: "update",
      group: "agentplane.dev",
      resource: "agentrevisions/status",
      namespace: "a",
      name: "r",
    });
    expect(toApiCall("GET", "/api/v1/namespaces/a/pods")).toEqual({
      verb: "list",
      group: "",
      resource: "pods",
      namespace: "a",
    });
    expect(toApiCall("GET", "/apis/apps/v1")).toBeUndefined();
    expect(toApiCall("GET", "/version")).toBeUndefined();
  });
});
