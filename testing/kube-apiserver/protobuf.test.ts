import { describe, expect, it } from "vitest";
import { decodeKubernetesProtobuf } from "./protobuf.ts";

/**
 * Request bodies captured once from kubectl v1.32.4 (`kubectl -v=8` prints them in hex), for the
 * commands named in each case.
 */
const CAPTURED = {
  namespace: // kubectl create namespace team-a
    "6b3873000a0f0a02763112094e616d657370616365121e0a160a067465616d2d6112001a0022002a0032003800420012001a020a001a002200",
  secret: // kubectl create secret generic api-keys -n default --from-literal=OPENAI_API_KEY=sk-test --from-literal=empty=
    "6b3873000a0c0a027631120653656372657412490a1f0a086170692d6b65797312001a0764656661756c7422002a0032003800420012190a0e4f50454e41495f4150495f4b45591207736b2d7465737412090a05656d70747912001a001a002200",
  typedSecret: // kubectl create secret generic typed -n default --type=kubernetes.io/basic-auth --from-literal=username=u --from-literal=password=p
    "6b3873000a0c0a027631120653656372657412560a1c0a05747970656412001a0764656661756c7422002a00320038004200120d0a0870617373776f7264120170120d0a08757365726e616d651201751a186b756265726e657465732e696f2f62617369632d617574681a002200",
  configMap: // kubectl create configmap settings -n default --from-literal=mode=fast --from-file=bin=/dev/null
    "6b3873000a0f0a0276311209436f6e6669674d617012380a1f0a0873657474696e677312001a0764656661756c7422002a0032003800420012070a0362696e1200120c0a046d6f64651204666173741a002200",
  savedConfigMap: // kubectl create configmap saved -n default --save-config --from-literal=k=v
    "6b3873000a0f0a0276311209436f6e6669674d617012e2010ad7010a05736176656412001a0764656661756c7422002a0032003800420062b8010a306b75626563746c2e6b756265726e657465732e696f2f6c6173742d6170706c6965642d636f6e66696775726174696f6e1283017b226b696e64223a22436f6e6669674d6170222c2261706956657273696f6e223a227631222c226d65746164617461223a7b226e616d65223a227361766564222c226e616d657370616365223a2264656661756c74222c226372656174696f6e54696d657374616d70223a6e756c6c7d2c2264617461223a7b226b223a2276227d7d0a12060a016b1201761a002200",
  serviceAccount: // kubectl create serviceaccount runner -n default
    "6b3873000a140a027631120e536572766963654163636f756e74121f0a1d0a0672756e6e657212001a0764656661756c7422002a003200380042001a002200",
  resourceQuota: // kubectl create quota q1 -n default --hard=pods=1
    "6b3873000a130a027631120d5265736f7572636551756f7461122c0a190a02713112001a0764656661756c7422002a00320038004200120d0a0b0a04706f647312030a01311a001a002200",
};
const decode = (hex: string) => decodeKubernetesProtobuf(Buffer.from(hex, "hex"));

/** A tiny encoder for what kubectl create never sends: length-delimited fields and booleans. */
const varint = (n: number): Buffer =>
  n < 0x80 ? Buffer.from([n]) : Buffer.concat([Buffer.from([(n & 0x7f) | 0x80]), varint(n >>> 7)]);
const field = (number: number, value: Buffer | string): Buffer => {
  const bytes = Buffer.from(value);
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
};
const bool = (number: number, value: boolean) => Buffer.from([number << 3, value ? 1 : 0]);
const entry = (number: number, key: string, value: string) =>
  field(number, Buffer.concat([field(1, key), field(2, value)]));
const envelope = (kind: string, raw: Buffer) =>
  Buffer.concat([
    Buffer.from("k8s\0", "latin1"),
    field(1, Buffer.concat([field(1, "v1"), field(2, kind)])),
    field(2, raw),
  ]);
const b64 = (value: string) => Buffer.from(value).toString("base64");

describe("Kubernetes protobuf request bodies", () => {
  it.each([
    ["namespace", { apiVersion: "v1", kind: "Namespace", metadata: { name: "team-a" } }],
    [
      "secret",
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "api-keys", namespace: "default" },
        data: { OPENAI_API_KEY: b64("sk-test"), empty: "" },
      },
    ],
    [
      "typedSecret",
      {
        apiVersion: "v1",
        kind: "Secret",
        metadata: { name: "typed", namespace: "default" },
        data: { password: b64("p"), username: b64("u") },
        type: "kubernetes.io/basic-auth",
      },
    ],
    [
      "configMap",
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: { name: "settings", namespace: "default" },
        data: { bin: "", mode: "fast" },
      },
    ],
    [
      "savedConfigMap",
      {
        apiVersion: "v1",
        kind: "ConfigMap",
        metadata: {
          name: "saved",
          namespace: "default",
          annotations: {
            "kubectl.kubernetes.io/last-applied-configuration": `${JSON.stringify({
              kind: "ConfigMap",
              apiVersion: "v1",
              metadata: { name: "saved", namespace: "default", creationTimestamp: null },
              data: { k: "v" },
            })}\n`,
          },
        },
        data: { k: "v" },
      },
    ],
    [
      "serviceAccount",
      { apiVersion: "v1", kind: "ServiceAccount", metadata: { name: "runner", namespace: "default" } },
    ],
  ] as const)("decodes `kubectl create` %s to the JSON object", (name, expected) => {
    expect(decode(CAPTURED[name])).toEqual(expected);
  });

  it("decodes labels, owner references and finalizers", () => {
    const metadata = Buffer.concat([
      field(1, "team-b"),
      entry(11, "team", "b"),
      entry(11, "tier", "dev"),
      field(13, Buffer.concat([field(1, "AgentDeployment"), field(3, "a"), field(4, "uid-1"), bool(6, true)])),
      field(14, "example.com/cleanup"),
    ]);
    const raw = Buffer.concat([field(1, metadata), field(2, field(1, "kubernetes"))]);
    expect(decodeKubernetesProtobuf(envelope("Namespace", raw))).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: {
        name: "team-b",
        labels: { team: "b", tier: "dev" },
        ownerReferences: [{ kind: "AgentDeployment", name: "a", uid: "uid-1", controller: true }],
        finalizers: ["example.com/cleanup"],
      },
      spec: { finalizers: ["kubernetes"] },
    });
  });

  it("answers 415 for a set field it does not decode, and skips empty ones", () => {
    const metadata = field(1, Buffer.concat([field(1, "x"), field(15, "")]));
    expect(decodeKubernetesProtobuf(envelope("Namespace", metadata))).toEqual({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: "x" },
    });
    const withStatusConditions = Buffer.concat([metadata, field(3, field(2, "condition"))]);
    expect(() => decodeKubernetesProtobuf(envelope("Namespace", withStatusConditions))).toThrow(
      expect.objectContaining({ code: 415, message: expect.stringContaining("field 2 of Namespace.status") }),
    );
  });

  it("answers 415 naming a kind it does not decode", () => {
    expect(() => decode(CAPTURED.resourceQuota)).toThrow(
      expect.objectContaining({
        code: 415,
        reason: "UnsupportedMediaType",
        message: expect.stringContaining("v1/ResourceQuota"),
      }),
    );
  });

  it.each([
    ["no k8s magic", "7b7d"],
    ["a truncated message", CAPTURED.namespace.slice(0, 40)],
    ["a truncated varint", "6b387300ff"],
  ])("answers 400 for %s", (_, hex) => {
    expect(() => decode(hex)).toThrow(expect.objectContaining({ code: 400, reason: "BadRequest" }));
  });
});
