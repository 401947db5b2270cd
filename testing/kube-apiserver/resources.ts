import type { CrdManifest, OpenApiSchema, PrinterColumn } from "@agentplane/crds";
import type { BuiltinValidator } from "./builtin-validation.ts";

/** One served resource: what discovery advertises and what the handlers need to know about it. */
export interface ResourceType {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Has a `/status` subresource: the main endpoint ignores status, `/status` changes only status. */
  statusSubresource: boolean;
  /** Maintains metadata.generation (bumped on changes outside metadata and status). */
  tracksGeneration: boolean;
  /** Custom resources only: the structural schema objects are validated against and pruned by. */
  schema?: OpenApiSchema;
  printerColumns?: PrinterColumn[];
  /** Built-in kinds: the schema check of the real OpenAPI (see builtin-validation.ts). */
  validateBuiltin?: BuiltinValidator;
}

export function apiVersionOf(type: Pick<ResourceType, "group" | "version">): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

export function typeKey(type: Pick<ResourceType, "group" | "plural">): string {
  return `${type.group}/${type.plural}`;
}

type BuiltinSpec = [
  group: string,
  version: string,
  kind: string,
  plural: string,
  flags: { cluster?: boolean; status?: boolean; generation?: boolean; short?: string[]; all?: boolean },
];

const BUILTINS: BuiltinSpec[] = [
  ["", "v1", "Namespace", "namespaces", { cluster: true, status: true, short: ["ns"] }],
  ["", "v1", "Node", "nodes", { cluster: true, status: true, short: ["no"] }],
  ["", "v1", "Secret", "secrets", {}],
  ["", "v1", "ConfigMap", "configmaps", { short: ["cm"] }],
  ["", "v1", "Service", "services", { status: true, short: ["svc"], all: true }],
  ["", "v1", "Pod", "pods", { status: true, generation: true, short: ["po"], all: true }],
  ["", "v1", "Event", "events", { short: ["ev"] }],
  ["", "v1", "ServiceAccount", "serviceaccounts", { short: ["sa"] }],
  ["", "v1", "ResourceQuota", "resourcequotas", { status: true, short: ["quota"] }],
  ["", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", { status: true, short: ["pvc"] }],
  ["apps", "v1", "Deployment", "deployments", { status: true, generation: true, short: ["deploy"], all: true }],
  ["apps", "v1", "StatefulSet", "statefulsets", { status: true, generation: true, short: ["sts"], all: true }],
  ["apps", "v1", "ReplicaSet", "replicasets", { status: true, generation: true, short: ["rs"], all: true }],
  [
    "autoscaling",
    "v2",
    "HorizontalPodAutoscaler",
    "horizontalpodautoscalers",
    { status: true, short: ["hpa"], all: true },
  ],
  ["coordination.k8s.io", "v1", "Lease", "leases", {}],
  ["networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", { generation: true, short: ["netpol"] }],
  ["policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", { status: true, generation: true, short: ["pdb"] }],
  ["events.k8s.io", "v1", "Event", "events", { short: ["ev"] }],
  [
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    { cluster: true, status: true, generation: true, short: ["crd", "crds"] },
  ],
];

export function builtinResourceTypes(validators: Map<string, BuiltinValidator>): ResourceType[] {
  return BUILTINS.map(([group, version, kind, plural, flags]) => ({
    validateBuiltin: validators.get(`${group}/${plural}`),
    group,
    version,
    kind,
    plural,
    singular: kind.toLowerCase(),
    namespaced: !flags.cluster,
    shortNames: flags.short ?? [],
    categories: flags.all ? ["all"] : [],
    statusSubresource: flags.status ?? false,
    tracksGeneration: flags.generation ?? false,
  }));
}

/** The resource types a CRD serves (one per served version). */
export function crdResourceTypes(crd: CrdManifest): ResourceType[] {
  const { group, names, scope } = crd.spec;
  return crd.spec.versions
    .filter((version) => version.served)
    .map((version) => ({
      group,
      version: version.name,
      kind: names.kind,
      plural: names.plural,
      singular: names.singular,
      namespaced: scope === "Namespaced",
      shortNames: names.shortNames ?? [],
      categories: names.categories ?? [],
      statusSubresource: version.subresources?.status !== undefined,
      tracksGeneration: true,
      schema: version.schema.openAPIV3Schema,
      ...(version.additionalPrinterColumns ? { printerColumns: version.additionalPrinterColumns } : {}),
    }));
}

/** The resource types served, looked up the way request paths name them. */
export class ResourceRegistry {
  private readonly byPath = new Map<string, ResourceType>();

  constructor(types: ResourceType[]) {
    for (const type of types) this.add(type);
  }

  add(type: ResourceType): void {
    this.byPath.set(`${apiVersionOf(type)}/${type.plural}`, type);
  }

  remove(group: string, plural: string): void {
    for (const [path, type] of this.byPath) {
      if (type.group === group && type.plural === plural) this.byPath.delete(path);
    }
  }

  find(apiVersion: string, plural: string): ResourceType | undefined {
    return this.byPath.get(`${apiVersion}/${plural}`);
  }

  all(): ResourceType[] {
    return [...this.byPath.values()];
  }

  /** groupVersion → its resources, core group first. */
  groupVersions(): Map<string, ResourceType[]> {
    const versions = new Map<string, ResourceType[]>();
    for (const type of this.all()) {
      const key = apiVersionOf(type);
      versions.set(key, [...(versions.get(key) ?? []), type]);
    }
    return versions;
  }
}
