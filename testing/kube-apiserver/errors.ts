import type { FieldError } from "./schema-validation.ts";

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: { reason: string; message: string; field: string }[];
  retryAfterSeconds?: number;
}

/** An API error answered with a `Status` body, as the real apiserver does. */
export class KubeError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly details: StatusDetails | undefined;

  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  status(): Record<string, unknown> {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** `agentdeployments.agentplane.dev` for a group resource, `pods` for the core group. */
export interface GroupResource {
  group: string;
  plural: string;
  kind: string;
}

function qualified(resource: GroupResource): string {
  return resource.group ? `${resource.plural}.${resource.group}` : resource.plural;
}

export function notFound(resource: GroupResource, name: string): KubeError {
  return new KubeError(404, "NotFound", `${qualified(resource)} "${name}" not found`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

export function alreadyExists(resource: GroupResource, name: string): KubeError {
  return new KubeError(409, "AlreadyExists", `${qualified(resource)} "${name}" already exists`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

export function conflict(resource: GroupResource, name: string, why: string): KubeError {
  return new KubeError(409, "Conflict", `Operation cannot be fulfilled on ${qualified(resource)} "${name}": ${why}`, {
    name,
    group: resource.group,
    kind: resource.plural,
  });
}

export const STALE_OBJECT =
  "the object has been modified; please apply your changes to the latest version and try again";

export function invalid(resource: GroupResource, name: string, errors: FieldError[]): KubeError {
  const kindGroup = resource.group ? `${resource.kind}.${resource.group}` : resource.kind;
  const summaries = errors.map((e) => `${e.field}: ${e.message}`);
  const summary = summaries.length === 1 ? summaries[0] : `[${summaries.join(", ")}]`;
  return new KubeError(422, "Invalid", `${kindGroup} "${name}" is invalid: ${summary}`, {
    name,
    group: resource.group,
    kind: resource.kind,
    causes: errors.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
  });
}

export function badRequest(message: string): KubeError {
  return new KubeError(400, "BadRequest", message);
}

export function gone(message: string): KubeError {
  return new KubeError(410, "Expired", message);
}
