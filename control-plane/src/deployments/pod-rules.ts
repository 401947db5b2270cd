import type { ValidationIssue } from "@agentplane/common";
import {
  isReservedMetadataKey,
  parseQuantity,
  RESERVED_METADATA_DOMAINS,
  RESERVED_NAME_PREFIX,
} from "@agentplane/crds";

/**
 * The rules of a deployment's pod fields that span several fields (the per-field allow-list is
 * pod-policy.ts): reserved label and annotation keys, unique names, mounts of declared volumes, and
 * what Kubernetes itself would refuse later (port names, requests above limits, autoscaling without a
 * CPU request), so the user gets a 422 naming the field instead of a revision that fails.
 */

/** The container the operator builds for the agent server; the volume names it adds start with this. */
const AGENT_CONTAINER = "agent-server";
interface ContainerResources {
  requests?: Partial<Record<string, string>>;
  limits?: Partial<Record<string, string>>;
}

interface PolicyContainerFields {
  name: string;
  volumeMounts?: { name: string }[];
  ports?: { name?: string }[];
  resources?: ContainerResources;
}

/** The Kubernetes-shaped part of `resource_spec` that the cross-field rules read. */
export interface PodFields {
  min_scale?: number | null;
  max_scale?: number | null;
  cpu?: number | null;
  cpu_limit?: number | null;
  memory_mb?: number | null;
  memory_limit_mb?: number | null;
  labels?: Record<string, string> | null;
  annotations?: Record<string, string> | null;
  volumes?: { name: string }[] | null;
  volume_mounts?: { name: string }[] | null;
  sidecars?: PolicyContainerFields[] | null;
  init_containers?: (PolicyContainerFields & { restartPolicy?: string })[] | null;
}

type Loc = (string | number)[];

const issue = (loc: Loc, msg: string, type = "value_error"): ValidationIssue => ({ loc, msg, type });

/**
 * The rules that span fields of a parsed `resource_spec` (at `loc`): platform-owned label and
 * annotation keys, unique names that do not clash with the agent server's, and mounts of declared
 * volumes only.
 */
export function podFieldIssues(spec: PodFields, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const field of ["labels", "annotations"] as const) {
    for (const key of Object.keys(spec[field] ?? {})) {
      if (isReservedMetadataKey(key)) {
        issues.push(issue([...loc, field, key], `keys under ${RESERVED_METADATA_DOMAINS.join(", ")} are reserved`));
      }
    }
  }
  const volumeNames = new Set<string>();
  (spec.volumes ?? []).forEach((volume, index) => {
    if (volume.name.startsWith(RESERVED_NAME_PREFIX)) {
      issues.push(
        issue([...loc, "volumes", index, "name"], `volume names starting '${RESERVED_NAME_PREFIX}' are reserved`),
      );
    } else if (volumeNames.has(volume.name)) {
      issues.push(issue([...loc, "volumes", index, "name"], "volume names must be unique"));
    }
    volumeNames.add(volume.name);
  });
  const checkMounts = (mounts: { name: string }[] | undefined | null, at: Loc) => {
    (mounts ?? []).forEach((mount, index) => {
      if (!volumeNames.has(mount.name)) {
        issues.push(issue([...at, index, "name"], `no volume named '${mount.name}' in resource_spec.volumes`));
      }
    });
  };
  checkMounts(spec.volume_mounts, [...loc, "volume_mounts"]);
  const containerNames = new Set([AGENT_CONTAINER]);
  for (const field of ["init_containers", "sidecars"] as const) {
    (spec[field] ?? []).forEach((container, index) => {
      if (containerNames.has(container.name)) {
        issues.push(issue([...loc, field, index, "name"], `container name '${container.name}' is already taken`));
      }
      containerNames.add(container.name);
      checkMounts(container.volumeMounts, [...loc, field, index, "volumeMounts"]);
      issues.push(...containerIssues(container, [...loc, field, index]));
    });
  }
  issues.push(...resourceIssues(spec, loc));
  return issues;
}

/**
 * What Kubernetes itself refuses in a container (pkg/apis/core/validation), checked here so the user
 * gets a 422 naming the field instead of a revision that fails later: port names are IANA service
 * names (a Service's targetPort refers to them), and no request exceeds its limit.
 */
function containerIssues(container: PolicyContainerFields, at: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  (container.ports ?? []).forEach((port, index) => {
    const name = port.name;
    if (name === undefined || name === "") return;
    const valid = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) && /[a-z]/.test(name) && !name.includes("--");
    if (!valid || name.length > 15) {
      issues.push(
        issue(
          [...at, "ports", index, "name"],
          "must be an IANA service name: at most 15 lowercase letters, digits and single hyphens, with a letter, not starting or ending with a hyphen",
        ),
      );
    }
  });
  const limits = container.resources?.limits ?? {};
  for (const [resource, request] of Object.entries(container.resources?.requests ?? {})) {
    const limit = limits[resource];
    if (request === undefined || limit === undefined) continue;
    if ((parseQuantity(request) ?? Number.NaN) > (parseQuantity(limit) ?? Number.NaN)) {
      issues.push(
        issue(
          [...at, "resources", "requests", resource],
          `must be less than or equal to the ${resource} limit (${limit})`,
        ),
      );
    }
  }
  return issues;
}

/** Whether the operator gives the deployment an autoscaler (its rule: more than one replica possible). */
function autoscales(spec: PodFields): boolean {
  return spec.max_scale != null && spec.max_scale > Math.max(1, spec.min_scale ?? 1);
}

/**
 * The agent server's own limits may not be below its requests (Kubernetes refuses the pod template),
 * and autoscaling needs a CPU request on every container: the autoscaler scales on CPU utilization
 * (usage / request) and, missing one request, reports "missing request for cpu" and never scales.
 */
function resourceIssues(spec: PodFields, loc: Loc): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (spec.cpu != null && spec.cpu_limit != null && spec.cpu_limit < spec.cpu) {
    issues.push(
      issue([...loc, "cpu_limit"], `must be at least cpu (${spec.cpu}): a limit below the request is refused`),
    );
  }
  if (spec.memory_mb != null && spec.memory_limit_mb != null && spec.memory_limit_mb < spec.memory_mb) {
    issues.push(
      issue(
        [...loc, "memory_limit_mb"],
        `must be at least memory_mb (${spec.memory_mb}): a limit below the request is refused`,
      ),
    );
  }
  if (!autoscales(spec)) return issues;
  const why = "is required when max_scale exceeds min_scale: the autoscaler scales on CPU utilization of the request";
  if (spec.cpu == null && spec.cpu_limit == null) issues.push(issue([...loc, "cpu"], why));
  (spec.sidecars ?? []).forEach((sidecar, index) => {
    const resources = sidecar.resources;
    if (resources?.requests?.cpu === undefined && resources?.limits?.cpu === undefined) {
      issues.push(issue([...loc, "sidecars", index, "resources", "requests", "cpu"], why));
    }
  });
  return issues;
}
