import type { IncomingMessage, ServerResponse } from "node:http";
import type { KubeApi } from "./api.ts";
import { badRequest, KubeError } from "./errors.ts";

/** Query parameters of `pods/log` the node's kubelet applies (passed through as the apiserver does). */
const FORWARDED = ["timestamps", "sinceTime", "sinceSeconds", "tailLines", "limitBytes", "previous"];

interface PodShape {
  spec?: { nodeName?: string; containers?: { name: string }[]; initContainers?: { name: string }[] };
}

interface NodeShape {
  status?: {
    addresses?: { type: string; address: string }[];
    daemonEndpoints?: { kubeletEndpoint?: { Port?: number } };
  };
}

/**
 * `GET /api/v1/namespaces/{ns}/pods/{name}/log`: like the real apiserver, the pod's node is looked
 * up and the request goes on to that node's kubelet (`/containerLogs/{ns}/{pod}/{container}` at the
 * Node's InternalIP and `status.daemonEndpoints.kubeletEndpoint.Port`), whose text comes back as is.
 * Deviation: `follow` is not supported (the log so far is returned).
 */
export async function servePodLog(
  api: KubeApi,
  request: IncomingMessage,
  response: ServerResponse,
  namespace: string,
  name: string,
  query: URLSearchParams,
): Promise<void> {
  if (request.method !== "GET")
    throw new KubeError(405, "MethodNotAllowed", `${request.method} is not supported on pods/log`);
  const pod = api.get(api.resource("v1", "pods"), namespace, name) as PodShape;
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].map((c) => c.name);
  const container = query.get("container") ?? (pod.spec?.containers?.length === 1 ? containers[0] : undefined);
  if (!container) {
    throw badRequest(`a container name must be specified for pod ${name}, choose one of: [${containers.join(" ")}]`);
  }
  if (!containers.includes(container)) throw badRequest(`container ${container} is not valid for pod ${name}`);
  const nodeName = pod.spec?.nodeName;
  if (!nodeName) throw badRequest(`pod ${name} does not have a host assigned`);
  const node = api.store.get(api.resource("v1", "nodes"), undefined, nodeName) as NodeShape | undefined;
  const address = node?.status?.addresses?.find((a) => a.type === "InternalIP")?.address;
  const port = node?.status?.daemonEndpoints?.kubeletEndpoint?.Port;
  if (!address || !port) {
    throw new KubeError(500, "InternalError", `node ${nodeName} has no kubelet endpoint`);
  }
  const forwarded = new URLSearchParams();
  for (const key of FORWARDED) {
    const value = query.get(key);
    if (value !== null) forwarded.set(key, value);
  }
  const path = [namespace, name, container].map(encodeURIComponent).join("/");
  let upstream: Response;
  try {
    upstream = await fetch(`http://${address}:${port}/containerLogs/${path}?${forwarded}`);
  } catch (error) {
    throw new KubeError(
      500,
      "InternalError",
      `Get "https://${address}:${port}/containerLogs/${path}": ${String(error)}`,
    );
  }
  const text = await upstream.text();
  if (!upstream.ok)
    throw new KubeError(
      upstream.status === 404 ? 404 : 500,
      upstream.status === 404 ? "NotFound" : "InternalError",
      text.trim(),
    );
  response.writeHead(200, { "Content-Type": "text/plain" });
  response.end(text);
}
