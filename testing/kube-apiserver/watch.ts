import type { ServerResponse } from "node:http";
import { gone } from "./errors.ts";
import { apiVersionOf, type ResourceType, typeKey } from "./resources.ts";
import type { Selector } from "./selectors.ts";
import type { EventType, KubeObject, ObjectStore, StoreEvent } from "./store.ts";

export interface WatchRequest {
  resource: ResourceType;
  namespace: string | undefined;
  resourceVersion: string | undefined;
  selector: Selector;
  allowBookmarks: boolean;
  sendInitialEvents: boolean;
  timeoutSeconds: number | undefined;
  bookmarkIntervalMs: number;
  /** How an object is sent: itself, or (for kubectl get -w) as a one-row Table. */
  render: (object: KubeObject) => unknown;
}

/** What a watcher with a selector sees of a change: objects entering or leaving the selection are ADDED/DELETED. */
function visibleAs(event: StoreEvent, selector: Selector): EventType | undefined {
  const now = selector(event.object);
  const before = event.previous ? selector(event.previous) : false;
  if (event.type === "ADDED") return now ? "ADDED" : undefined;
  if (event.type === "DELETED") return now || before ? "DELETED" : undefined;
  if (now) return before ? "MODIFIED" : "ADDED";
  return before ? "DELETED" : undefined;
}

/**
 * Streams a watch as newline-delimited JSON events. With no resourceVersion (or "0") it starts
 * with a synthetic ADDED per existing object; with one it replays the retained history after it,
 * or sends a 410 Expired ERROR event when that history has been compacted away.
 */
export function serveWatch(store: ObjectStore, response: ServerResponse, watch: WatchRequest): void {
  response.writeHead(200, { "Content-Type": "application/json", "Cache-Control": "no-cache" });
  response.flushHeaders();
  const send = (type: string, object: unknown) => response.write(`${JSON.stringify({ type, object })}\n`);
  const inScope = (event: StoreEvent) =>
    typeKey(event.resource) === typeKey(watch.resource) &&
    (watch.namespace === undefined || event.object.metadata.namespace === watch.namespace);
  const deliver = (event: StoreEvent) => {
    if (!inScope(event)) return;
    const type = visibleAs(event, watch.selector);
    if (type) send(type, watch.render(event.object));
  };
  const bookmark = (annotations?: Record<string, string>) =>
    send("BOOKMARK", {
      kind: watch.resource.kind,
      apiVersion: apiVersionOf(watch.resource),
      metadata: { resourceVersion: String(store.resourceVersion), ...(annotations ? { annotations } : {}) },
    });

  const from = watch.resourceVersion && watch.resourceVersion !== "0" ? Number(watch.resourceVersion) : undefined;
  if (from !== undefined && (!Number.isInteger(from) || from < store.oldestResumableVersion)) {
    const error = gone(`too old resource version: ${watch.resourceVersion} (${store.oldestResumableVersion})`);
    send("ERROR", error.status());
    response.end();
    return;
  }
  if (from === undefined || watch.sendInitialEvents) {
    for (const object of store.list(watch.resource, watch.namespace)) {
      if (watch.selector(object)) send("ADDED", watch.render(object));
    }
    if (watch.sendInitialEvents && watch.allowBookmarks) bookmark({ "k8s.io/initial-events-end": "true" });
  } else {
    for (const event of store.eventsSince(from)) deliver(event);
  }
  const unsubscribe = store.subscribe(deliver);
  const bookmarks = watch.allowBookmarks ? setInterval(() => bookmark(), watch.bookmarkIntervalMs) : undefined;
  const timeout = watch.timeoutSeconds ? setTimeout(() => response.end(), watch.timeoutSeconds * 1000) : undefined;
  response.on("close", () => {
    unsubscribe();
    clearInterval(bookmarks);
    clearTimeout(timeout);
  });
}
