import { forbidden, HttpError } from "@agentplane/common";

/**
 * The project's `Auth` (from `@langchain/langgraph-sdk/auth`) as this server uses it, checked by
 * shape: the project has its own copy of the SDK.
 */
export interface ProjectAuth {
  "~handlerCache": {
    authenticate?: (request: Request) => unknown;
    callbacks?: Record<string, AuthHandler | undefined>;
  };
}

export type AuthResource = "threads" | "assistants" | "crons" | "store";

/** Every event the reference servers raise, by resource. */
export const AUTH_EVENTS = {
  threads: ["create", "read", "update", "delete", "search", "create_run"],
  assistants: ["create", "read", "update", "delete", "search"],
  crons: ["create", "read", "update", "delete", "search"],
  store: ["put", "get", "search", "list_namespaces", "delete"],
} as const;

type Actions = typeof AUTH_EVENTS;
export type AuthEvent = { [R in AuthResource]: `${R}:${Actions[R][number]}` }[AuthResource];

/** What `authenticate` returned, normalised as the reference normalises it. */
export interface AuthUser {
  identity: string;
  display_name: string;
  is_authenticated: boolean;
  permissions: string[];
  [field: string]: unknown;
}

/** `{key: value}`, `{key: {$eq: value}}` or `{key: {$contains: value | values}}`, all of which must hold. */
export type AuthFilter = Record<string, unknown>;

interface HandlerParameter {
  event: AuthEvent;
  resource: AuthResource;
  action: string;
  value: unknown;
  user: AuthUser;
  permissions: string[];
}
type AuthHandler = (parameter: HandlerParameter) => unknown;

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

export function isProjectAuth(value: unknown): value is ProjectAuth {
  return isObject(value) && isObject(value["~handlerCache"]);
}

/**
 * What user auth code threw, as the response it asks for: an `HTTPException` (any copy of the
 * SDK: recognised by its `status` and `headers`) keeps its status, message and headers; anything
 * else is a 401, so a failing check never surfaces as a server error.
 */
export class AuthRejection extends HttpError {
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(status, message);
    this.headers = headers;
  }

  static from(error: unknown): AuthRejection {
    if (error instanceof AuthRejection) return error;
    if (isObject(error) && typeof error.status === "number" && "headers" in error) {
      const status = error.status >= 400 && error.status <= 599 ? error.status : 401;
      const message = typeof error.message === "string" && error.message ? error.message : "Unauthorized";
      return new AuthRejection(status, message, headerRecord(error.headers));
    }
    return new AuthRejection(401, "Unauthorized");
  }
}

function headerRecord(headers: unknown): Record<string, string> {
  if (headers instanceof Headers) return Object.fromEntries(headers);
  if (!isObject(headers)) return {};
  return Object.fromEntries(
    Object.entries(headers).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );
}

/** `authenticate`'s result as the user: a string is an identity; an object needs a string `identity`. */
export function normalizeUser(result: unknown): AuthUser {
  if (typeof result === "string") {
    return { identity: result, display_name: result, is_authenticated: true, permissions: [] };
  }
  if (isObject(result) && typeof result.identity === "string") {
    const permissions = Array.isArray(result.permissions)
      ? result.permissions.filter((p): p is string => typeof p === "string")
      : [];
    return {
      ...result,
      identity: result.identity,
      permissions,
      is_authenticated: typeof result.is_authenticated === "boolean" ? result.is_authenticated : true,
      display_name: typeof result.display_name === "string" ? result.display_name : result.identity,
    };
  }
  throw new AuthRejection(401, "authenticate must return a string or an object with a string identity");
}

type Callbacks = Record<string, AuthHandler | undefined>;
const NO_CALLBACKS: Callbacks = {};

interface ResolvedHandler {
  handler: AuthHandler;
  resource: AuthResource;
  action: string;
}

/**
 * Each `Auth`'s handler per event, found on the event's first use rather than on every request.
 * `on(...)` runs while the project's module loads, before the server takes any request.
 */
const resolvedHandlers = new WeakMap<Callbacks, Map<AuthEvent, ResolvedHandler | null>>();

/** The handler for an event: the most specific of `resource:action`, `resource`, `*:action`, `*`. */
function handlerFor(callbacks: Callbacks, event: AuthEvent): ResolvedHandler | null {
  let byEvent = resolvedHandlers.get(callbacks);
  if (!byEvent) {
    byEvent = new Map();
    resolvedHandlers.set(callbacks, byEvent);
  }
  let resolved = byEvent.get(event);
  if (resolved === undefined) {
    const [resource, action] = event.split(":") as [AuthResource, string];
    const key = [event, resource, `*:${action}`, "*"].find((candidate) => callbacks[candidate]);
    const handler = key === undefined ? undefined : callbacks[key];
    resolved = handler ? { handler, resource, action } : null;
    byEvent.set(event, resolved);
  }
  return resolved;
}

/**
 * One request's authenticated user, and the project's `on(...)` handlers to authorize what it
 * does. Services take it as an optional last argument: without one (no custom auth, or the
 * server's own work such as cron firings and TTL sweeps) nothing is filtered.
 */
export class RequestAuth {
  readonly user: AuthUser;
  readonly #callbacks: Callbacks;

  constructor(user: AuthUser, auth: ProjectAuth) {
    this.user = user;
    this.#callbacks = auth["~handlerCache"].callbacks ?? NO_CALLBACKS;
  }

  get permissions(): string[] {
    return this.user.permissions;
  }

  /**
   * Runs the handler for `event` on `value`, which it may change in place (stamp an owner into
   * `metadata`, prefix a store namespace). Returns the filter the resource must match, or
   * undefined for none; 403 when the handler returns false, its status when it throws an
   * `HTTPException`, 401 when it throws anything else.
   */
  async authorize(event: AuthEvent, value: object): Promise<AuthFilter | undefined> {
    const resolved = handlerFor(this.#callbacks, event);
    if (!resolved) return undefined;
    const { handler, resource, action } = resolved;
    let result: unknown;
    try {
      result = await handler({ event, resource, action, value, user: this.user, permissions: this.permissions });
    } catch (error) {
      throw AuthRejection.from(error);
    }
    if (result === undefined || result === null || result === true) return undefined;
    if (result === false) throw forbidden("Forbidden");
    if (!isObject(result) || Array.isArray(result)) {
      throw new HttpError(
        500,
        `Auth handler for ${event} returned invalid result. Expected filter object, null, undefined or boolean. Got "${typeof result}" instead.`,
      );
    }
    return result;
  }
}

/**
 * Where graphs find the authenticated user, as on the reference: `config.configurable` keys a
 * run is stored with, so a worker in another process sees the same user.
 */
export function authConfigurable(auth: RequestAuth): Record<string, unknown> {
  return {
    langgraph_auth_user: auth.user,
    langgraph_auth_user_id: auth.user.identity,
    langgraph_auth_permissions: auth.permissions,
  };
}

/** The filter (if any) and the possibly changed value: no auth, no filter. */
export async function authorize<V extends object>(
  auth: RequestAuth | undefined,
  event: AuthEvent,
  value: V,
): Promise<AuthFilter | undefined> {
  return auth ? auth.authorize(event, value) : undefined;
}

/**
 * Whether a resource's metadata matches an auth filter. As the reference: a plain value and
 * `$eq` compare strictly, `$contains` needs an array holding the value (every value of an array
 * of them). Stricter where the reference is lax, so a filter never lets too much through: `$eq`
 * counts even for falsy values, and an operator object with nothing known in it matches nothing.
 */
export function matchesAuthFilter(
  metadata: Record<string, unknown> | undefined,
  filter: AuthFilter | undefined,
): boolean {
  if (!filter) return true;
  for (const [key, expected] of Object.entries(filter)) {
    const actual = metadata?.[key];
    if (!isObject(expected)) {
      if (actual !== expected) return false;
      continue;
    }
    const operators = Object.keys(expected);
    if (!operators.includes("$eq") && !operators.includes("$contains")) return false;
    if ("$eq" in expected && actual !== expected.$eq) return false;
    if ("$contains" in expected) {
      if (!Array.isArray(actual)) return false;
      const wanted = Array.isArray(expected.$contains) ? expected.$contains : [expected.$contains];
      if (!wanted.every((item) => actual.includes(item))) return false;
    }
  }
  return true;
}

const isScalar = (value: unknown) => value === null || ["string", "number", "boolean"].includes(typeof value);

/**
 * An auth filter merged into a store query's metadata containment, so its equalities use the
 * metadata indexes: the merged containment and what must still be checked record by record
 * (`$contains`). Undefined when the two cannot both hold, so the query matches nothing.
 */
export function mergeAuthFilter(
  metadata: Record<string, unknown> | undefined,
  filter: AuthFilter | undefined,
): { metadata: Record<string, unknown> | undefined; residual: AuthFilter | undefined } | undefined {
  if (!filter) return { metadata, residual: undefined };
  const merged: Record<string, unknown> = { ...metadata };
  const residual: AuthFilter = {};
  for (const [key, expected] of Object.entries(filter)) {
    const operators = isObject(expected) && !Array.isArray(expected) ? Object.keys(expected) : undefined;
    if (operators && !(operators.length === 1 && operators[0] === "$eq")) {
      residual[key] = expected;
      continue;
    }
    const value = operators ? (expected as { $eq: unknown }).$eq : expected;
    // Equality is strict: an object or array never equals one read from storage.
    if (!isScalar(value)) return undefined;
    if (key in merged && merged[key] !== value) return undefined;
    merged[key] = value;
  }
  return { metadata: merged, residual: Object.keys(residual).length > 0 ? residual : undefined };
}
