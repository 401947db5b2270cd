import { describe, expect, it } from "vitest";
import {
  isReservedEnvName,
  isReservedMetadataKey,
  SHARED_WITH_ANNOTATION,
  sharedWithWorkspace,
} from "./tenant-policy.ts";

describe("tenant policy shared by the control plane and the operator", () => {
  it.each([
    ["tenant-1", true],
    ["tenant-2,tenant-1", true],
    [" TENANT-1 ", true],
    ["*", true],
    ["tenant-2", false],
    ["tenant-1x", false],
    ["", false],
    [undefined, false],
  ])("annotation %j shares with tenant-1: %s", (value, expected) => {
    const annotations: Record<string, string> = value === undefined ? {} : { [SHARED_WITH_ANNOTATION]: value };
    expect(sharedWithWorkspace(annotations, "tenant-1")).toBe(expected);
  });

  it("shares nothing without annotations", () => {
    expect(sharedWithWorkspace(undefined, "tenant-1")).toBe(false);
  });

  it.each([
    ["AGENTPLANE_API_KEYS", true],
    ["AGENTPLANE_ANYTHING", true],
    ["agentplane_api_keys", true],
    ["KUBERNETES_SERVICE_HOST", true],
    ["REDIS_URI", true],
    ["PORT", true],
    ["NODE_OPTIONS", true],
    ["LANGCHAIN_API_KEY", true],
    ["LOG_LEVEL", false],
    ["OPENAI_API_KEY", false],
  ])("env name %s reserved: %s", (name, reserved) => {
    expect(isReservedEnvName(name)).toBe(reserved);
  });

  it.each([
    ["pod-security.kubernetes.io/enforce", true],
    ["app.kubernetes.io/name", true],
    ["agentplane.dev/revision-id", true],
    ["x.k8s.io/y", true],
    ["team", false],
    ["example.com/owner", false],
    ["notkubernetes.io/x", false],
  ])("metadata key %s reserved: %s", (key, reserved) => {
    expect(isReservedMetadataKey(key)).toBe(reserved);
  });
});
