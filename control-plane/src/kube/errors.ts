import { ApiException } from "@kubernetes/client-node";

/** `reason` of a Kubernetes `Status` failure body (NotFound, Conflict, AlreadyExists, Invalid, ...). */
export function kubeReason(error: unknown): string | undefined {
  if (!(error instanceof ApiException)) return undefined;
  const body: unknown = error.body;
  if (body && typeof body === "object") return (body as { reason?: string }).reason;
  if (typeof body !== "string") return undefined;
  try {
    return (JSON.parse(body) as { reason?: string }).reason;
  } catch {
    return undefined;
  }
}

export function kubeStatus(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

export const isNotFound = (error: unknown) => kubeStatus(error) === 404;

export const isAlreadyExists = (error: unknown) => kubeStatus(error) === 409 && kubeReason(error) === "AlreadyExists";

/** A stale `resourceVersion`: 409 with reason Conflict (AlreadyExists is a 409 too, but not retryable). */
export const isConflict = (error: unknown) => kubeStatus(error) === 409 && kubeReason(error) !== "AlreadyExists";

/** Resolves to `undefined` when the object does not exist. */
export async function orUndefined<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** Thrown when an update still conflicts after every retry: the object is hot, the caller may retry later. */
export class ConflictRetriesExhausted extends Error {}

/**
 * Runs a read-modify-write `attempt` until it does not hit a resourceVersion conflict, with a short
 * jittered backoff, as client-go's `RetryOnConflict` does.
 */
export async function retryOnConflict<T>(attempt: () => Promise<T>, attempts = 8): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isConflict(error)) throw error;
      if (i >= attempts) throw new ConflictRetriesExhausted("the object kept changing while it was updated");
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 5 * i));
    }
  }
}
