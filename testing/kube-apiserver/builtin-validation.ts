import { badRequest, invalid } from "./errors.ts";
import type { ResourceType } from "./resources.ts";
import type { KubeObject } from "./store.ts";

/** An error as reported by the ajv validators kubernetes-models generates from the Kubernetes OpenAPI. */
interface SchemaError {
  instancePath: string;
  keyword: string;
  params: { type?: string; missingProperty?: string; allowedValues?: unknown[]; format?: string };
  message?: string;
}

export type BuiltinValidator = (object: KubeObject) => SchemaError[];

/** kubernetes-models module per served built-in resource (`<group>/<plural>`). */
const MODELS: Record<string, string> = {
  "/namespaces": "v1/Namespace",
  "/nodes": "v1/Node",
  "/secrets": "v1/Secret",
  "/configmaps": "v1/ConfigMap",
  "/services": "v1/Service",
  "/pods": "v1/Pod",
  "/events": "v1/Event",
  "/serviceaccounts": "v1/ServiceAccount",
  "/persistentvolumeclaims": "v1/PersistentVolumeClaim",
  "/resourcequotas": "v1/ResourceQuota",
  "apps/deployments": "apps/v1/Deployment",
  "apps/statefulsets": "apps/v1/StatefulSet",
  "apps/replicasets": "apps/v1/ReplicaSet",
  "autoscaling/horizontalpodautoscalers": "autoscaling/v2/HorizontalPodAutoscaler",
  "coordination.k8s.io/leases": "coordination.k8s.io/v1/Lease",
  "networking.k8s.io/networkpolicies": "networking.k8s.io/v1/NetworkPolicy",
  "policy/poddisruptionbudgets": "policy/v1/PodDisruptionBudget",
  "events.k8s.io/events": "events.k8s.io/v1/Event",
  "apiextensions.k8s.io/customresourcedefinitions": "apiextensions.k8s.io/v1/CustomResourceDefinition",
};

/** Loads the schema validators of the built-in kinds (generated from the real OpenAPI by kubernetes-models). */
export async function loadBuiltinValidators(): Promise<Map<string, BuiltinValidator>> {
  const entries = await Promise.all(
    Object.entries(MODELS).map(async ([key, path]) => {
      const module = (await import(`kubernetes-models/${path}`)) as Record<string, any>;
      const Model = module[path.split("/").at(-1) ?? ""];
      const validate: BuiltinValidator = (object) => {
        try {
          new Model(object).validate();
          return [];
        } catch (error) {
          return ((error as { errors?: SchemaError[] }).errors ?? []) as SchemaError[];
        }
      };
      return [key, validate] as const;
    }),
  );
  return new Map(entries);
}

function fieldPath(error: SchemaError): string {
  const segments = error.instancePath.split("/").filter(Boolean);
  const path = segments.map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`)).join("");
  return error.params.missingProperty ? `${path ? `${path}.` : ""}${error.params.missingProperty}` : path;
}

/**
 * Turns schema errors into the apiserver's answers: a wrong JSON type cannot even be decoded
 * into the Go struct (400 BadRequest); anything else is a validation failure (422 Invalid).
 */
export function rejectBuiltin(resource: ResourceType, object: KubeObject, schemaErrors: SchemaError[]): void {
  // The apiserver decodes status strictly but validates little of it (a kubelet's partial
  // container statuses are accepted), so only type errors count there.
  const errors = schemaErrors.filter((e) => e.keyword === "type" || !e.instancePath.startsWith("/status"));
  const decodeError = errors.find((e) => e.keyword === "type");
  if (decodeError) {
    throw badRequest(
      `${resource.kind} in version "${resource.version}" cannot be handled as a ${resource.kind}: json: cannot unmarshal into Go struct field ${resource.kind}.${fieldPath(decodeError)} of type ${decodeError.params.type}`,
    );
  }
  if (errors.length === 0) return;
  throw invalid(
    resource,
    object.metadata.name,
    errors.map((e) =>
      e.keyword === "required"
        ? { field: fieldPath(e), reason: "FieldValueRequired" as const, message: "Required value" }
        : e.keyword === "enum"
          ? {
              field: fieldPath(e),
              reason: "FieldValueNotSupported" as const,
              message: `Unsupported value: supported values: ${(e.params.allowedValues ?? []).map((v) => JSON.stringify(v)).join(", ")}`,
            }
          : {
              field: fieldPath(e),
              reason: "FieldValueInvalid" as const,
              message: `Invalid value: ${e.message ?? e.keyword}`,
            },
    ),
  );
}
