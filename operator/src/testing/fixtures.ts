import { type AgentDeployment, type AgentRevision, API_VERSION, type RevisionTemplate } from "@agentplane/crds";
import { desiredChildren } from "../build/children.ts";
import { childLabels, nameOf, REVISION_LABEL } from "../build/names.ts";
import { defaultBuildSettings } from "../build/settings.ts";
import type { KubeObject } from "../kube/client.ts";
import type { LiveDeployment, LivePod } from "../status/rollout.ts";

export const DEPLOYMENT_ID = "3f1c2b6e-9a41-4d7e-8f3a-2d5e6c7b8a90";
export const REVISION_ID = "7d2e4f10-1b3c-4a5d-9e8f-0a1b2c3d4e5f";

export function agentDeployment(
  spec: Partial<AgentDeployment["spec"]> = {},
  metadata: Partial<AgentDeployment["metadata"]> = {},
): AgentDeployment {
  return {
    apiVersion: API_VERSION,
    kind: "AgentDeployment",
    metadata: { name: DEPLOYMENT_ID, namespace: "agents", uid: "uid-agd", generation: 1, ...metadata },
    spec: {
      displayName: "my-agent",
      tenantId: "tenant-1",
      source: "external_docker",
      revisionName: REVISION_ID,
      template: { image: "example/agent:1" },
      ...spec,
    },
  };
}

export function agentRevision(
  template: Partial<RevisionTemplate> = {},
  metadata: Partial<AgentRevision["metadata"]> = {},
  status?: AgentRevision["status"],
): AgentRevision {
  const image = template.image ?? "example/agent:1";
  return {
    apiVersion: API_VERSION,
    kind: "AgentRevision",
    metadata: {
      name: REVISION_ID,
      namespace: "agents",
      generation: 1,
      creationTimestamp: "2026-01-01T00:00:10Z",
      ...metadata,
    },
    spec: {
      deploymentId: DEPLOYMENT_ID,
      source: "external_docker",
      sourceRevisionConfig: { image_uri: image },
      template: { image, ...template },
    },
    ...(status ? { status } : {}),
  };
}

export function liveDeployment(
  status: NonNullable<LiveDeployment["status"]>,
  replicas = 1,
  generation = 2,
): LiveDeployment {
  return {
    metadata: { name: "agent", generation },
    spec: { replicas },
    status: { observedGeneration: generation, ...status },
  };
}

export function waitingPod(reason: string, extra: { exitCode?: number; restartCount?: number } = {}): LivePod {
  return {
    metadata: { name: "agent-abc" },
    status: {
      phase: "Running",
      containerStatuses: [
        {
          name: "agent-server",
          restartCount: extra.restartCount ?? 0,
          state: { waiting: { reason, message: `${reason} details` } },
          ...(extra.exitCode === undefined ? {} : { lastState: { terminated: { exitCode: extra.exitCode } } }),
        },
      ],
    },
  };
}

/** The children the reconciler creates and applies for `agd` serving `revision`, as the API server stores them. */
export function appliedChildren(
  agd: AgentDeployment,
  revision: AgentRevision,
  statuses: Partial<Record<string, object>> = {},
): KubeObject[] {
  const desired = desiredChildren(agd, revision, defaultBuildSettings);
  const created = desired.createOnce.map((child) => child.build());
  return [...created, ...desired.apply].map((child) => {
    const status = statuses[child.kind as string];
    return status ? { ...child, status } : child;
  });
}

/** A pod of the agent-server Deployment running `revision`, labelled as the pod template labels it. */
export function agentPod(
  agd: AgentDeployment,
  revision: AgentRevision,
  name: string,
  status: NonNullable<LivePod["status"]>,
): LivePod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name,
      namespace: agd.metadata.namespace,
      labels: { ...childLabels(agd, "agent-server"), [REVISION_LABEL]: nameOf(revision) },
    },
    spec: { containers: [{ name: "agent-server", image: revision.spec.template.image }] },
    status,
  } as LivePod;
}
