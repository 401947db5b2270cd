import type { IncomingMessage } from "node:http";
import { parse as parseYaml } from "yaml";
import { badRequest } from "./errors.ts";
import { decodeKubernetesProtobuf, PROTOBUF_MEDIA_TYPE } from "./protobuf.ts";

/** A resource request path, split the way the apiserver's request info resolver does. */
export interface ResourcePath {
  apiVersion: string;
  namespace: string | undefined;
  plural: string;
  name: string | undefined;
  subresource: string | undefined;
}

/**
 * `/api/v1/namespaces/ns/pods/x/status` or `/apis/g/v/namespaces/ns/plural/x`. `isNamespaced`
 * resolves `/api/v1/namespaces/<name>/<something>`: a namespaced resource, or a namespace's subresource.
 */
export function parseResourcePath(
  pathname: string,
  isNamespaced: (apiVersion: string, plural: string) => boolean,
): ResourcePath | undefined {
  const segments = pathname.split("/").filter(Boolean).map(decodeURIComponent);
  let apiVersion: string;
  let rest: string[];
  if (segments[0] === "api" && segments[1]) {
    apiVersion = segments[1];
    rest = segments.slice(2);
  } else if (segments[0] === "apis" && segments[1] && segments[2]) {
    apiVersion = `${segments[1]}/${segments[2]}`;
    rest = segments.slice(3);
  } else return undefined;
  if (rest.length === 0) return undefined;
  if (rest[0] === "namespaces" && rest.length >= 3 && isNamespaced(apiVersion, rest[2] ?? "")) {
    return { apiVersion, namespace: rest[1], plural: rest[2] ?? "", name: rest[3], subresource: rest[4] };
  }
  if (rest.length > 3) return undefined;
  return { apiVersion, namespace: undefined, plural: rest[0] ?? "", name: rest[1], subresource: rest[2] };
}

export async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** JSON bodies, YAML for server-side apply (JSON is valid YAML), or protobuf from typed clients. */
export function parseBody(body: Buffer, contentType: string): unknown {
  if (contentType === PROTOBUF_MEDIA_TYPE && body.length > 0) return decodeKubernetesProtobuf(body);
  const text = body.toString("utf8");
  if (text.trim() === "") return undefined;
  try {
    return contentType.startsWith("application/apply-patch+yaml") || contentType.includes("yaml")
      ? parseYaml(text)
      : JSON.parse(text);
  } catch (error) {
    throw badRequest(`the request body could not be decoded: ${(error as Error).message}`);
  }
}

/** The default field manager: the user agent's program name, as the apiserver derives it. */
export function fieldManagerOf(query: URLSearchParams, request: IncomingMessage): string {
  const fromQuery = query.get("fieldManager");
  if (fromQuery) return fromQuery;
  const agent = request.headers["user-agent"] ?? "unknown";
  return agent.split("/")[0] || "unknown";
}

export function mediaType(request: IncomingMessage): string {
  return (request.headers["content-type"] ?? "application/json").split(";")[0]?.trim() ?? "application/json";
}
