import { deploymentBody } from "../../testing/harness.ts";
import type { Case } from "./bad-input-table.ts";

/**
 * Deployment bodies Kubernetes itself would refuse (or never act on), which the control plane
 * refuses at its API instead (issue #20): part of the table of ../bad-input.integration.test.ts.
 */

const valid = deploymentBody("new-one");
export const withSourceConfig = (sourceConfig: Record<string, unknown>) => ({
  ...valid,
  source_config: { ...valid.source_config, ...sourceConfig },
});
export const withResources = (spec: Record<string, unknown>) => withSourceConfig({ resource_spec: spec });

export const kubernetesRefusals: Case[] = [
  {
    name: "cpu_limit below cpu",
    body: withResources({ cpu: 2, cpu_limit: 0.5 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "cpu_limit"],
  },
  {
    name: "memory_limit_mb below memory_mb",
    body: withResources({ memory_mb: 1024, memory_limit_mb: 512 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "memory_limit_mb"],
  },
  {
    name: "autoscaling (max_scale above min_scale) without a CPU request",
    body: withResources({ min_scale: 1, max_scale: 3 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "cpu"],
  },
  {
    name: "autoscaling with a sidecar that has no CPU request",
    body: withResources({ min_scale: 1, max_scale: 3, cpu: 0.5, sidecars: [{ name: "proxy", image: "envoy:1" }] }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "sidecars", 0, "resources", "requests", "cpu"],
  },
  {
    name: "a sidecar's memory request above its limit",
    body: withResources({
      sidecars: [
        { name: "proxy", image: "envoy:1", resources: { requests: { memory: "1Gi" }, limits: { memory: "512Mi" } } },
      ],
    }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "sidecars", 0, "resources", "requests", "memory"],
  },
  {
    name: "a sidecar port name over 15 characters",
    body: withResources({
      sidecars: [{ name: "proxy", image: "envoy:1", ports: [{ name: "metrics-endpoint", containerPort: 9000 }] }],
    }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "sidecars", 0, "ports", 0, "name"],
  },
  {
    name: "a sidecar port name that is not an IANA service name",
    body: withResources({
      sidecars: [{ name: "proxy", image: "envoy:1", ports: [{ name: "Metrics_1", containerPort: 9000 }] }],
    }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "sidecars", 0, "ports", 0, "name"],
  },
  {
    name: "a volume with no source",
    body: withResources({ volumes: [{ name: "data" }] }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "volumes", 0],
  },
  {
    name: "min_scale not a number",
    body: withResources({ min_scale: "two" }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "min_scale"],
  },
  {
    name: "fractional memory_mb",
    body: withResources({ memory_mb: 1.5 }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "memory_mb"],
  },
  {
    name: "invalid pod label value",
    body: withResources({ labels: { team: "not ok!" } }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "labels", "team"],
  },
  {
    name: "sidecar without image",
    body: withResources({ sidecars: [{ name: "proxy" }] }),
    status: 422,
    loc: ["body", "source_config", "resource_spec", "sidecars", 0, "image"],
  },
  {
    name: "namespace not a DNS label",
    body: withSourceConfig({ listener_config: { k8s_namespace: "Bad_NS" } }),
    status: 422,
    loc: ["body", "source_config", "listener_config", "k8s_namespace"],
  },
  {
    name: "namespace not managed",
    body: withSourceConfig({ listener_config: { k8s_namespace: "kube-system" } }),
    status: 422,
    loc: ["body", "source_config", "listener_config", "k8s_namespace"],
  },
  {
    name: "listener_id not a UUID",
    body: withSourceConfig({ listener_id: "l-1" }),
    status: 422,
    loc: ["body", "source_config", "listener_id"],
  },
  {
    name: "custom_url not a URL",
    body: withSourceConfig({ custom_url: "agent.example" }),
    status: 422,
    loc: ["body", "source_config", "custom_url"],
  },
];
