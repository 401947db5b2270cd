import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { connectionFromKubeconfig, loadKubeConnection } from "./config.ts";

function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "kubeconfig-"));
  writeFileSync(join(dir, "token"), "file-token\n");
  const path = join(dir, "config");
  writeFileSync(
    path,
    stringify({
      "current-context": "c",
      contexts: [{ name: "c", context: { cluster: "k", user: "u" } }],
      clusters: [{ name: "k", cluster: { server: "https://kube.example:6443/", ...cluster } }],
      users: [{ name: "u", user }],
    }),
  );
  return path;
}

describe("connectionFromKubeconfig", () => {
  it.each([
    ["a bearer token", { token: "abc" }, { authorization: "Bearer abc" }],
    ["a token file relative to the kubeconfig", { tokenFile: "token" }, { authorization: "Bearer file-token" }],
    [
      "basic auth",
      { username: "a", password: "b" },
      { authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
    ],
    ["a client certificate only", {}, {}],
  ])("authenticates with %s", async (_what, user, headers) => {
    const connection = connectionFromKubeconfig(kubeconfig(user));
    expect(connection.server).toBe("https://kube.example:6443");
    expect(await connection.headers()).toEqual(headers);
  });

  it("gets exec-plugin credentials through @kubernetes/client-node", async () => {
    const credential = {
      apiVersion: "client.authentication.k8s.io/v1beta1",
      kind: "ExecCredential",
      status: { token: "token-from-plugin" },
    };
    const exec = {
      apiVersion: "client.authentication.k8s.io/v1beta1",
      command: process.execPath,
      args: ["-e", `process.stdout.write(${JSON.stringify(JSON.stringify(credential))})`],
    };
    const connection = connectionFromKubeconfig(kubeconfig({ exec }));
    const headers = await connection.headers();
    expect(headers.Authorization ?? headers.authorization).toBe("Bearer token-from-plugin");
  });

  it("names a missing context", () => {
    const path = kubeconfig({ token: "x" });
    writeFileSync(path, stringify({ "current-context": "nope", contexts: [] }));
    expect(() => connectionFromKubeconfig(path)).toThrow(/"nope" not found/);
  });
});

describe("loadKubeConnection", () => {
  it("prefers the first existing file in KUBECONFIG", () => {
    const path = kubeconfig({ token: "abc" });
    expect(loadKubeConnection({ KUBECONFIG: `/does/not/exist:${path}` }).source).toBe(path);
  });
});
