import type { PrinterColumn } from "@agentplane/crds";
import { isObject } from "./patch.ts";
import type { ResourceType } from "./resources.ts";
import type { KubeObject } from "./store.ts";

/** Evaluates the JSONPath subset printer columns use: `.a.b`, `[0]`, `[*]` and `[?(@.k=='v')]` filters. */
export function jsonPath(value: unknown, path: string): unknown[] {
  const tokens = path.match(/\.[^.[]+|\[[^\]]*\]/g) ?? [];
  let nodes: unknown[] = [value];
  for (const token of tokens) {
    nodes = nodes.flatMap((node) => {
      if (token.startsWith("."))
        return isObject(node) && node[token.slice(1)] !== undefined ? [node[token.slice(1)]] : [];
      if (!Array.isArray(node)) return [];
      const inner = token.slice(1, -1);
      if (inner === "*") return node;
      const filter = /^\?\(@\.([\w.-]+)\s*==\s*['"](.*)['"]\)$/.exec(inner);
      if (filter) return node.filter((item) => String(jsonPath(item, `.${filter[1]}`)[0]) === filter[2]);
      const item = node[Number(inner)];
      return item === undefined ? [] : [item];
    });
  }
  return nodes;
}

/** Like the apiserver's `duration.HumanDuration`: 45s, 12m, 3h4m, 5d. */
export function humanDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return `${minutes}m${seconds % 60 === 0 ? "" : `${seconds % 60}s`}`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return `${hours}h${minutes % 60 === 0 ? "" : `${minutes % 60}m`}`;
  if (hours < 48) return `${hours}h`;
  return `${Math.floor(hours / 24)}d`;
}

function cell(column: PrinterColumn, object: KubeObject): unknown {
  const values = jsonPath(object, column.jsonPath);
  if (values.length === 0) return null;
  const value = values[0];
  if (column.type === "date" && typeof value === "string") return humanDuration(Date.now() - Date.parse(value));
  if (isObject(value) || Array.isArray(value)) return JSON.stringify(value);
  return values.length > 1 ? values.join(",") : value;
}

const DEFAULT_COLUMNS: PrinterColumn[] = [{ name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" }];

/** The `Table` (meta.k8s.io/v1) kubectl asks for: Name plus the CRD's printer columns (or Age). */
export function toTable(
  resource: ResourceType,
  objects: KubeObject[],
  resourceVersion: string,
  includeObject: string,
): Record<string, unknown> {
  const columns = resource.printerColumns ?? DEFAULT_COLUMNS;
  const columnDefinitions = [
    {
      name: "Name",
      type: "string",
      format: "name",
      description: "Name must be unique within a namespace.",
      priority: 0,
    },
    ...columns.map((c) => ({
      name: c.name,
      type: c.type,
      format: c.format ?? "",
      description: c.description ?? "",
      priority: c.priority ?? 0,
    })),
  ];
  const rows = objects.map((object) => ({
    cells: [object.metadata.name, ...columns.map((column) => cell(column, object))],
    object: rowObject(object, includeObject),
  }));
  return { kind: "Table", apiVersion: "meta.k8s.io/v1", metadata: { resourceVersion }, columnDefinitions, rows };
}

function rowObject(object: KubeObject, includeObject: string): unknown {
  if (includeObject === "None") return undefined;
  if (includeObject === "Object") return object;
  const { managedFields: _managed, ...metadata } = object.metadata;
  return { kind: "PartialObjectMetadata", apiVersion: "meta.k8s.io/v1", metadata };
}

export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? "").split(",").some((part) => part.includes("as=Table"));
}
