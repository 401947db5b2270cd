import type { AgentDeployment, AgentRevision } from "@agentplane/crds";
import { describe, expect, it } from "vitest";
import { restrictedViolations } from "../../../testing/kube-apiserver/pod-security.ts";
import { ATTACKS, type Attack, OWN_SECRET, sidecar } from "../testing/attacks.ts";
import { agentDeployment, agentRevision, DEPLOYMENT_ID } from "../testing/fixtures.ts";
import { buildAgentDeployment } from "./agent-server.ts";
import {
  describeViolations,
  foreignReferences,
  hardenedSecurityContext,
  type PolicyContext,
  policyViolations,
} from "./pod-policy.ts";
import { buildRedisStatefulSet } from "./redis.ts";
import { defaultBuildSettings as settings } from "./settings.ts";

type Json = any;

const nothingShared: PolicyContext = { isShared: () => false };

function attackObjects(attack: Attack): { agd: AgentDeployment; revision: AgentRevision } {
  const agd = agentDeployment(attack.deployment ?? {});
  const revision = agentRevision({
    secretName: OWN_SECRET,
    ...attack.template,
    ...(attack.resources ? { resources: attack.resources } : {}),
  });
  return { agd, revision };
}

/** The pod template as the builder rendered it before the policy: tenant containers passed through as written. */
function unsanitizedPod(agd: AgentDeployment, revision: AgentRevision) {
  const pod: Json = structuredClone(buildAgentDeployment(agd, revision, settings).spec.template);
  const resources = revision.spec.template.resources;
  if (resources?.initContainers) pod.spec.initContainers = resources.initContainers;
  pod.spec.containers = [pod.spec.containers[0], ...(resources?.sidecars ?? [])];
  return pod;
}

describe("pod policy: custom resources carrying the attacks of issue #15", () => {
  it.each(Object.entries(ATTACKS))("%s is refused, naming the field", (_name, attack) => {
    const { agd, revision } = attackObjects(attack);
    const violations = policyViolations(agd, revision, nothingShared);
    const kind = attack.deployment ? "AgentDeployment" : "AgentRevision";
    expect(violations.map((v) => v.field)).toContain(`${kind} ${attack.field}`);
    expect(describeViolations(violations)).toContain(attack.field);
  });

  it.each(Object.entries(ATTACKS).filter(([, attack]) => attack.restricted))(
    "%s: the restricted profile check finds it in the unsanitized render",
    (_name, attack) => {
      const { agd, revision } = attackObjects(attack);
      const found = restrictedViolations(unsanitizedPod(agd, revision));
      expect(found.join("\n")).toMatch(attack.restricted as RegExp);
    },
  );

  it("the safe sidecar the container attacks start from passes both", () => {
    const { agd, revision } = attackObjects({ field: "", resources: { sidecars: [sidecar()] } });
    expect(policyViolations(agd, revision, nothingShared)).toEqual([]);
    expect(restrictedViolations(unsanitizedPod(agd, revision))).toEqual([]);
  });
});

describe("pod policy: what a deployment may use", () => {
  it("allows its own Secrets, the volume types of the allow-list and safe container settings", () => {
    const revision = agentRevision({
      secretName: OWN_SECRET,
      secretReferences: [{ name: "OPENAI_API_KEY", secretName: `${DEPLOYMENT_ID}-llm`, secretKey: "k" }],
      resources: {
        volumes: [
          { name: "a", emptyDir: {} },
          { name: "b", secret: { secretName: `${DEPLOYMENT_ID}-files` } },
          { name: "c", projected: { sources: [{ downwardAPI: { items: [] } }, { secret: { name: OWN_SECRET } }] } },
        ],
        volumeMounts: [{ name: "a", mountPath: "/a", mountPropagation: "None" }],
        labels: { team: "a" },
        sidecars: [
          sidecar({}, { readOnlyRootFilesystem: true, runAsUser: 1001, capabilities: { add: ["NET_BIND_SERVICE"] } }),
        ],
        initContainers: [{ name: "init", image: "busybox" }],
      },
    });
    const agd = agentDeployment({ apiKeysSecretName: `${DEPLOYMENT_ID}-api-keys` });
    expect(policyViolations(agd, revision, nothingShared)).toEqual([]);
  });

  it("allows a foreign Secret, ConfigMap or ServiceAccount only when shared with the workspace", () => {
    const revision = agentRevision({
      secretReferences: [{ name: "SHARED", secretName: "org-llm-key", secretKey: "k" }],
      resources: {
        serviceAccountName: "workload-identity",
        volumes: [{ name: "cfg", configMap: { name: "org-config" } }],
      },
    });
    const agd = agentDeployment();
    expect(foreignReferences(agd, revision)).toEqual([
      { kind: "Secret", name: "org-llm-key" },
      { kind: "ServiceAccount", name: "workload-identity" },
      { kind: "ConfigMap", name: "org-config" },
    ]);
    expect(policyViolations(agd, revision, nothingShared).map((v) => v.field)).toEqual([
      "AgentRevision spec.template.secretReferences[0].secretName",
      "AgentRevision spec.template.resources.serviceAccountName",
      "AgentRevision spec.template.resources.volumes[0].configMap.name",
    ]);
    expect(policyViolations(agd, revision, { isShared: () => true })).toEqual([]);
  });
});

describe("rendered pods pass the Pod Security Standards restricted profile", () => {
  const withContainers = agentRevision({
    resources: {
      initContainers: [{ name: "init", image: "busybox", command: ["true"] }],
      sidecars: [
        { name: "proxy", image: "envoy" },
        sidecar({ name: "bind" }, { capabilities: { add: ["NET_BIND_SERVICE"] }, runAsUser: 1001 }),
      ],
      volumes: [{ name: "cache", emptyDir: {} }],
      volumeMounts: [{ name: "cache", mountPath: "/cache" }],
    },
  });
  it.each([
    ["agent server alone", buildAgentDeployment(agentDeployment(), agentRevision(), settings).spec.template],
    [
      "agent server with API keys, sidecars and init containers",
      buildAgentDeployment(agentDeployment({ apiKeysSecretName: "k" }), withContainers, settings).spec.template,
    ],
    ["managed Redis", buildRedisStatefulSet(agentDeployment(), settings).spec.template],
  ])("%s", (_name, template) => {
    expect(restrictedViolations(template as Json)).toEqual([]);
    expect((template as Json).spec.automountServiceAccountToken).toBe(false);
  });

  it("fills in the restricted settings a tenant container left out, keeping what it may set", () => {
    expect(hardenedSecurityContext({ readOnlyRootFilesystem: true, runAsUser: 1001 })).toEqual({
      readOnlyRootFilesystem: true,
      runAsUser: 1001,
      privileged: false,
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
  });
});
