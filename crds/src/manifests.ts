import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";

/** The CRD manifests sit at the package root, one level above both `src/` and `dist/`. */
export const CRD_MANIFEST_PATHS: readonly string[] = ["agentdeployments.yaml", "agentrevisions.yaml"].map((file) =>
  fileURLToPath(new URL(`../${file}`, import.meta.url)),
);

/** A CustomResourceDefinition as parsed from YAML (apiextensions.k8s.io/v1). */
export interface CrdManifest {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    scope: "Namespaced" | "Cluster";
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames?: string[];
      categories?: string[];
    };
    versions: CrdVersion[];
  };
}

export interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
  subresources?: { status?: Record<string, never> };
  additionalPrinterColumns?: PrinterColumn[];
  schema: { openAPIV3Schema: OpenApiSchema };
}

export interface PrinterColumn {
  name: string;
  type: "integer" | "number" | "string" | "boolean" | "date";
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

/** The structural-schema subset of OpenAPI v3 that CRDs allow. */
export interface OpenApiSchema {
  type?: "object" | "array" | "string" | "integer" | "number" | "boolean";
  description?: string;
  format?: string;
  nullable?: boolean;
  enum?: unknown[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  required?: string[];
  properties?: Record<string, OpenApiSchema>;
  additionalProperties?: OpenApiSchema | boolean;
  items?: OpenApiSchema;
  "x-kubernetes-preserve-unknown-fields"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-validations"?: { rule: string; message?: string }[];
}

export function loadCrdManifests(): CrdManifest[] {
  return CRD_MANIFEST_PATHS.map((path) => parse(readFileSync(path, "utf8")) as CrdManifest);
}
