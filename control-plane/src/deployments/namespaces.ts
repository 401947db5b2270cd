import { conflict, HttpError } from "@agentplane/common";
import { GROUP, LABEL_TENANT_ID } from "@agentplane/crds";
import type { V1Namespace } from "@kubernetes/client-node";
import type { NamespaceLayout } from "../config.ts";
import type { WatchScope } from "../kube/cache.ts";

/** Marks a namespace the control plane created for a workspace (with LABEL_TENANT_ID naming it). */
export const LABEL_TENANT_NAMESPACE = `${GROUP}/tenant-namespace`;

/**
 * Pod Security admission labels of a tenant namespace: pods that break the `restricted` profile are
 * refused (enforce) and reported (warn, audit), whatever reaches the cluster around this API.
 */
const POD_SECURITY_LABELS = {
  "pod-security.kubernetes.io/enforce": "restricted",
  "pod-security.kubernetes.io/enforce-version": "latest",
  "pod-security.kubernetes.io/warn": "restricted",
  "pod-security.kubernetes.io/warn-version": "latest",
  "pod-security.kubernetes.io/audit": "restricted",
  "pod-security.kubernetes.io/audit-version": "latest",
};

const NAMESPACE_LOC = ["body", "source_config", "listener_config", "k8s_namespace"];

/** Where each tenant's deployments live, under the configured layout. */
export class NamespacePlacement {
  private readonly layout: NamespaceLayout;

  constructor(layout: NamespaceLayout) {
    this.layout = layout;
  }

  /** Whether the control plane creates namespaces (one per workspace). */
  get perWorkspace(): boolean {
    return this.layout.kind === "workspace";
  }

  /** What the read caches watch: the shared namespaces, or every namespace (tenant ones come and go). */
  get watchScope(): WatchScope {
    return this.layout.kind === "shared" ? this.layout.namespaces : "all";
  }

  /** The namespaces that may hold deployments of `tenantId`. */
  of(tenantId: string): string[] {
    return this.layout.kind === "shared" ? this.layout.namespaces : [this.tenantNamespace(tenantId)];
  }

  /** The namespace a new deployment goes to; `requested` (listener_config.k8s_namespace) must be one of the tenant's. */
  target(tenantId: string, requested: string | null | undefined): string {
    const allowed = this.of(tenantId);
    const namespace = requested ?? allowed[0];
    if (namespace && allowed.includes(namespace)) return namespace;
    throw new HttpError(422, [
      {
        loc: NAMESPACE_LOC,
        msg: `deployments of this workspace may go to ${allowed.map((ns) => `'${ns}'`).join(", ")} only`,
        type: "value_error",
      },
    ]);
  }

  private tenantNamespace(tenantId: string): string {
    if (this.layout.kind !== "workspace") throw new Error("no tenant namespaces in the shared layout");
    return `${this.layout.prefix}${tenantId.toLowerCase()}`;
  }
}

/** The Namespace the control plane creates for a workspace. */
export function tenantNamespaceObject(name: string, tenantId: string): V1Namespace {
  return {
    apiVersion: "v1",
    kind: "Namespace",
    metadata: {
      name,
      labels: {
        ...POD_SECURITY_LABELS,
        [LABEL_TENANT_NAMESPACE]: "true",
        [LABEL_TENANT_ID]: tenantId,
        "app.kubernetes.io/managed-by": "agentplane",
      },
    },
  };
}

/**
 * An existing namespace of that name is used only if the control plane made it for this workspace;
 * anything else (an administrator's namespace that happens to match) is left alone.
 */
export function ownedByTenant(namespace: V1Namespace, tenantId: string): boolean {
  const labels = namespace.metadata?.labels ?? {};
  return labels[LABEL_TENANT_NAMESPACE] === "true" && labels[LABEL_TENANT_ID] === tenantId;
}

export const foreignNamespace = (name: string) =>
  conflict(`Namespace '${name}' exists but was not created for this workspace; an administrator must resolve this.`);
