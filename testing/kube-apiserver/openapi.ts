import { createHash } from "node:crypto";
import { apiVersionOf, type ResourceRegistry, type ResourceType } from "./resources.ts";

// kubectl reads /openapi/v3 to learn whether PATCH of a kind accepts `fieldValidation` (then it
// leaves validation to the server) and which patch types it accepts. These documents carry just
// that: one path per resource with GET/PUT/PATCH/DELETE operations tagged with their kind.

function discoveryKey(groupVersion: string): string {
  return groupVersion.includes("/") ? `apis/${groupVersion}` : `api/${groupVersion}`;
}

/** GET /openapi/v3 */
export function openApiIndex(registry: ResourceRegistry): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [groupVersion] of registry.groupVersions()) {
    const hash = createHash("sha256")
      .update(JSON.stringify(groupVersionDocument(registry, groupVersion)))
      .digest("hex");
    paths[discoveryKey(groupVersion)] = { serverRelativeURL: `/openapi/v3/${discoveryKey(groupVersion)}?hash=${hash}` };
  }
  return { paths };
}

const QUERY_PARAMETERS = ["dryRun", "fieldManager", "fieldValidation", "force", "pretty"].map((name) => ({
  name,
  in: "query",
  schema: { type: name === "force" ? "boolean" : "string" },
  uniqueItems: true,
}));

function operations(type: ResourceType): Record<string, unknown> {
  const gvk = { group: type.group, version: type.version, kind: type.kind };
  const operation = (id: string, extra: Record<string, unknown> = {}) => ({
    operationId: `${id}${type.kind}`,
    "x-kubernetes-group-version-kind": gvk,
    parameters: QUERY_PARAMETERS,
    responses: { "200": { description: "OK" } },
    ...extra,
  });
  const content = (types: string[]) => ({
    content: Object.fromEntries(types.map((t) => [t, { schema: { type: "object" } }])),
  });
  return {
    get: operation("read"),
    put: operation("replace", { requestBody: content(["*/*"]) }),
    delete: operation("delete"),
    patch: operation("patch", {
      requestBody: content([
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
      ]),
    }),
  };
}

/** GET /openapi/v3/apis/<group>/<version> (or /openapi/v3/api/v1) */
export function groupVersionDocument(
  registry: ResourceRegistry,
  groupVersion: string,
): Record<string, unknown> | undefined {
  const types = registry.all().filter((type) => apiVersionOf(type) === groupVersion);
  if (types.length === 0) return undefined;
  const prefix = `/${discoveryKey(groupVersion)}`;
  const paths = Object.fromEntries(
    types.map((type) => [
      type.namespaced ? `${prefix}/namespaces/{namespace}/${type.plural}/{name}` : `${prefix}/${type.plural}/{name}`,
      operations(type),
    ]),
  );
  return {
    openapi: "3.0.0",
    info: { title: "Kubernetes", version: "v1.32.0" },
    paths,
    components: { schemas: {} },
  };
}
