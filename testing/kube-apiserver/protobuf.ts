import { readFields, type WireField } from "../protobuf-wire.ts";
import { badRequest, KubeError } from "./errors.ts";

/**
 * Decodes the Kubernetes protobuf request bodies that kubectl sends for built-in kinds
 * (`kubectl create namespace|secret|configmap|serviceaccount`: client-go's typed clients write
 * `application/vnd.kubernetes.protobuf` and do not fall back to JSON on a 415).
 *
 * The envelope is the magic `k8s\0` and a `runtime.Unknown` {typeMeta 1 {apiVersion 1, kind 2},
 * raw 2, contentEncoding 3, contentType 4}; `raw` is the object's generated message. Field numbers
 * are those of k8s.io/api/core/v1 and k8s.io/apimachinery/pkg/apis/meta/v1 `generated.proto`.
 * The result is the object's JSON form: gogo-protobuf writes every non-pointer field, even empty,
 * so empty strings, zero numbers and empty messages are dropped as JSON's `omitempty` would.
 */

export const PROTOBUF_MEDIA_TYPE = "application/vnd.kubernetes.protobuf";
const MAGIC = Buffer.from("k8s\0", "latin1");

type FieldType =
  | "string"
  /** Pointer booleans: present means set, even to false. */
  | "bool"
  | "strings"
  | "stringMap"
  /** `map<string, bytes>`: values become base64, as in JSON. */
  | "bytesMap"
  | { message: Schema }
  | { messages: Schema };

type Schema = Record<number, [name: string, type: FieldType]>;

const ownerReference: Schema = {
  1: ["kind", "string"],
  3: ["name", "string"],
  4: ["uid", "string"],
  5: ["apiVersion", "string"],
  6: ["controller", "bool"],
  7: ["blockOwnerDeletion", "bool"],
};

/** ObjectMeta; system-populated fields (creationTimestamp, managedFields, ...) are left to the server. */
const objectMeta: Schema = {
  1: ["name", "string"],
  2: ["generateName", "string"],
  3: ["namespace", "string"],
  5: ["uid", "string"],
  6: ["resourceVersion", "string"],
  11: ["labels", "stringMap"],
  12: ["annotations", "stringMap"],
  13: ["ownerReferences", { messages: ownerReference }],
  14: ["finalizers", "strings"],
};

/** Kinds by `apiVersion/kind`; a kind missing here is answered 415 so the user sees which one. */
const KINDS: Record<string, Schema> = {
  "v1/Namespace": {
    1: ["metadata", { message: objectMeta }],
    2: ["spec", { message: { 1: ["finalizers", "strings"] } }],
    3: ["status", { message: { 1: ["phase", "string"] } }],
  },
  "v1/Secret": {
    1: ["metadata", { message: objectMeta }],
    2: ["data", "bytesMap"],
    3: ["type", "string"],
    4: ["stringData", "stringMap"],
    5: ["immutable", "bool"],
  },
  "v1/ConfigMap": {
    1: ["metadata", { message: objectMeta }],
    2: ["data", "stringMap"],
    3: ["binaryData", "bytesMap"],
    4: ["immutable", "bool"],
  },
  "v1/ServiceAccount": {
    1: ["metadata", { message: objectMeta }],
    4: ["automountServiceAccountToken", "bool"],
  },
};

const text = (field: WireField | undefined) => field?.bytes?.toString("utf8") ?? "";
const isEmpty = (field: WireField) => (field.bytes ? field.bytes.length === 0 : field.varint === 0n);

/** A map entry message {key 1, value 2}. */
function mapEntry(field: WireField): [string, Buffer] {
  const entry = readFields(field.bytes ?? Buffer.alloc(0));
  const key = entry.find((f) => f.field === 1);
  const value = entry.find((f) => f.field === 2);
  return [text(key), value?.bytes ?? Buffer.alloc(0)];
}

/** `path` (`Namespace.status`) names the message in errors. */
function decodeMessage(bytes: Buffer, schema: Schema, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of readFields(bytes)) {
    const known = schema[field.field];
    if (!known) {
      if (isEmpty(field)) continue;
      throw new KubeError(
        415,
        "UnsupportedMediaType",
        `the test server does not decode field ${field.field} of ${path} from protobuf; send it as JSON (kubectl apply -f)`,
      );
    }
    const [name, type] = known;
    if (type === "bool") out[name] = field.varint === 1n;
    else if (type === "string") {
      if (!isEmpty(field)) out[name] = text(field);
    } else if (type === "strings") out[name] = [...((out[name] as string[]) ?? []), text(field)];
    else if (type === "stringMap" || type === "bytesMap") {
      const [key, value] = mapEntry(field);
      const map = (out[name] as Record<string, string>) ?? {};
      map[key] = type === "bytesMap" ? value.toString("base64") : value.toString("utf8");
      out[name] = map;
    } else if ("message" in type) {
      const message = decodeMessage(field.bytes ?? Buffer.alloc(0), type.message, `${path}.${name}`);
      if (Object.keys(message).length > 0) out[name] = message;
    } else {
      const item = decodeMessage(field.bytes ?? Buffer.alloc(0), type.messages, `${path}.${name}`);
      out[name] = [...((out[name] as unknown[]) ?? []), item];
    }
  }
  return out;
}

/** The object in a `k8s\0` + runtime.Unknown body, as the JSON a client would have sent. */
export function decodeKubernetesProtobuf(body: Buffer): Record<string, unknown> {
  if (!body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest("the request body could not be decoded: a protobuf body starts with k8s\\0");
  }
  try {
    const unknown = readFields(body.subarray(MAGIC.length));
    const typeMeta = readFields(unknown.find((f) => f.field === 1)?.bytes ?? Buffer.alloc(0));
    const apiVersion = text(typeMeta.find((f) => f.field === 1));
    const kind = text(typeMeta.find((f) => f.field === 2));
    const encoding = unknown.find((f) => f.field === 3);
    if (encoding && !isEmpty(encoding)) throw badRequest(`unsupported content encoding "${text(encoding)}"`);
    const schema = KINDS[`${apiVersion}/${kind}`];
    if (!schema) {
      throw new KubeError(
        415,
        "UnsupportedMediaType",
        `the test server decodes protobuf bodies only for ${Object.keys(KINDS).join(", ")}, not ${apiVersion}/${kind}; send it as JSON (kubectl apply -f)`,
      );
    }
    const raw = unknown.find((f) => f.field === 2)?.bytes ?? Buffer.alloc(0);
    return { apiVersion, kind, ...decodeMessage(raw, schema, kind) };
  } catch (error) {
    if (error instanceof KubeError) throw error;
    throw badRequest(`the request body could not be decoded: ${(error as Error).message}`);
  }
}
