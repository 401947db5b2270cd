import { randomBytes } from "node:crypto";
import { hashApiKey } from "@agentplane/common";

/**
 * Where `@langchain/langgraph-sdk`'s `Client` looks for a fetch when it is created without
 * `apiUrl`, the hook the reference server binds to itself. A global symbol, so the project's
 * copy of the SDK (loaded in its own tsx namespace) sees it too.
 */
const SDK_FETCH = Symbol.for("langgraph_api:fetch");

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

const global = globalThis as Record<symbol, unknown>;

/** Bound servers, latest last: the process-wide hook points at the latest one still running. */
const bound: Loopback[] = [];

function publish(): void {
  const latest = bound.at(-1);
  if (latest) global[SDK_FETCH] = latest.fetch;
  else delete global[SDK_FETCH];
}

/**
 * Requests this server sends itself: the SDK client of graphs and custom routes (`new Client()`
 * without `apiUrl`) and relative webhooks. Whatever origin the caller used, they go to this
 * server's own address and through its whole app (custom routes included), presenting a key
 * only this process knows, so they pass the API-key check without the user's keys.
 */
export class Loopback {
  private readonly key = randomBytes(32).toString("base64url");
  /** Accepted by the API-key check beside the configured keys. */
  readonly keyHash = hashApiKey(this.key);
  private url: string | undefined;

  readonly fetch: Fetch = (input, init) => {
    if (this.url === undefined) return Promise.reject(new Error("the agent server is not listening yet"));
    const request = input instanceof Request ? input : undefined;
    const source = new URL(request ? request.url : String(input), "http://loopback");
    const headers = new Headers(request?.headers);
    for (const [name, value] of new Headers(init?.headers)) headers.set(name, value);
    // Always this key: a LANGSMITH_API_KEY the SDK picked up from the environment means nothing here.
    headers.set("x-api-key", this.key);
    const target = new URL(`${source.pathname}${source.search}`, this.url);
    return fetch(request ? new Request(target, request) : target, { ...init, headers });
  };

  /** Points the SDK's hook at this server, listening at `url`, until `release`. */
  bind(url: string): void {
    this.url = url;
    bound.push(this);
    publish();
  }

  release(): void {
    const index = bound.indexOf(this);
    if (index >= 0) bound.splice(index, 1);
    publish();
  }
}

/** The fetch of the server the SDK's hook points at, for relative webhook URLs. */
export function boundLoopbackFetch(): Fetch {
  const fetch = global[SDK_FETCH];
  if (typeof fetch !== "function") throw new Error("no agent server is listening in this process");
  return fetch as Fetch;
}
