import { fetch } from "undici";
import type { KubeConnection } from "./config.ts";

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ownerReferences?: OwnerReference[];
    finalizers?: string[];
    deletionTimestamp?: string;
    creationTimestamp?: string;
  };
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface KubeList<T> {
  metadata: { resourceVersion?: string };
  items: T[];
}

/** A Kubernetes `Status` failure: `code` is the HTTP status, `reason` e.g. NotFound/Conflict/AlreadyExists. */
export class KubeApiError extends Error {
  readonly code: number;
  readonly reason: string;

  constructor(code: number, reason: string, message: string) {
    super(message);
    this.name = "KubeApiError";
    this.code = code;
    this.reason = reason;
  }
}

export function isNotFound(error: unknown): boolean {
  return error instanceof KubeApiError && error.code === 404;
}

export function isConflict(error: unknown): boolean {
  return error instanceof KubeApiError && error.code === 409;
}

export const contentTypes = {
  json: "application/json",
  merge: "application/merge-patch+json",
  jsonPatch: "application/json-patch+json",
  apply: "application/apply-patch+yaml",
} as const;

export interface RequestOptions {
  body?: unknown;
  contentType?: string;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

/**
 * A thin JSON client over the API server. Objects stay plain JSON (generated typed clients drop
 * fields they do not model and reshape dates), which is what server-side apply and the custom
 * resources need.
 */
export class KubeClient {
  readonly connection: KubeConnection;

  constructor(connection: KubeConnection) {
    this.connection = connection;
  }

  /** Sends a request and returns the raw response (for watch streams); throws KubeApiError on failure. */
  async send(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const url = new URL(this.connection.server + path);
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const headers: Record<string, string> = { ...(await this.connection.headers()), accept: contentTypes.json };
    if (options.body !== undefined) headers["content-type"] = options.contentType ?? contentTypes.json;
    const response = await fetch(url, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      dispatcher: this.connection.dispatcher,
      signal: options.signal,
    });
    if (!response.ok) throw toApiError(response.status, await response.text(), `${method} ${path}`);
    return response as unknown as Response;
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const text = await (await this.send(method, path, options)).text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  async get<T>(path: string): Promise<T | undefined> {
    try {
      return await this.request<T>("GET", path);
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  list<T>(path: string, labelSelector?: string, fieldSelector?: string): Promise<KubeList<T>> {
    return this.request<KubeList<T>>("GET", path, { query: { labelSelector, fieldSelector } });
  }

  create<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>("POST", path, { body });
  }

  /** Server-side apply of a fully specified intent, forcing ownership of the fields we send. */
  apply<T>(path: string, body: unknown, fieldManager: string): Promise<T> {
    return this.request<T>("PATCH", path, {
      body,
      contentType: contentTypes.apply,
      query: { fieldManager, force: true },
    });
  }

  mergePatch<T>(path: string, body: unknown, fieldManager: string): Promise<T> {
    return this.request<T>("PATCH", path, { body, contentType: contentTypes.merge, query: { fieldManager } });
  }

  jsonPatch<T>(path: string, ops: unknown[], fieldManager: string): Promise<T> {
    return this.request<T>("PATCH", path, { body: ops, contentType: contentTypes.jsonPatch, query: { fieldManager } });
  }

  /** Deletes; a missing object counts as deleted. */
  async delete(path: string, propagationPolicy = "Background"): Promise<void> {
    try {
      await this.request("DELETE", path, { body: { kind: "DeleteOptions", apiVersion: "v1", propagationPolicy } });
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
}

function toApiError(code: number, text: string, what: string): KubeApiError {
  try {
    const status = JSON.parse(text) as { reason?: string; message?: string };
    return new KubeApiError(code, status.reason ?? "Unknown", status.message ?? `${what}: HTTP ${code}`);
  } catch {
    return new KubeApiError(code, "Unknown", `${what}: HTTP ${code} ${text.slice(0, 200)}`);
  }
}
