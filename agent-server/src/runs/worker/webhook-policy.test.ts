import { describe, expect, it } from "vitest";
import { WebhookPolicy, webhookRefusal } from "./webhook-policy.ts";

const strict = new WebhookPolicy([]);

describe("WebhookPolicy", () => {
  it.each([
    "127.0.0.1",
    "127.1.2.3",
    "0.0.0.0",
    "10.0.0.5",
    "100.64.1.1",
    "169.254.169.254",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "224.0.0.1",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "fc00::1",
    "::ffff:127.0.0.1",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
  ])("refuses %s by default", (address) => {
    expect(strict.allowsAddress(address)).toBe(false);
    expect(strict.refusal("hooks.example", [address])).toContain(address);
  });

  it.each(["8.8.8.8", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "1.1.1.1"])("allows public %s", (address) => {
    expect(strict.allowsAddress(address)).toBe(true);
    expect(strict.refusal("hooks.example", [address])).toBeUndefined();
  });

  it("refuses a host when any of its addresses is refused", () => {
    expect(strict.refusal("mixed.example", ["8.8.8.8", "10.0.0.1"])).toContain("10.0.0.1");
  });

  it.each([
    "localhost",
    "api.localhost",
    "kubernetes.default.svc",
    "redis.ns.svc.cluster.local",
    "metadata.google.internal",
  ])("refuses the internal name %s whatever it resolves to", (host) => {
    expect(strict.refusal(host, ["8.8.8.8"])).toContain("internal");
  });

  it("allows the configured names, domains, addresses and ranges", () => {
    const policy = new WebhookPolicy([
      "hooks.ns.svc.cluster.local",
      "*.trusted.svc",
      "10.1.0.0/16",
      "127.0.0.1",
      "fd00::/8",
    ]);
    expect(policy.refusal("hooks.ns.svc.cluster.local", ["10.9.9.9"])).toBeUndefined();
    expect(policy.refusal("a.trusted.svc", ["192.168.0.1"])).toBeUndefined();
    expect(policy.refusal("other.svc", ["10.1.2.3"])).toBeUndefined();
    expect(policy.refusal("h.example", ["10.1.2.3"])).toBeUndefined();
    expect(policy.refusal("h.example", ["10.2.0.1"])).toContain("10.2.0.1");
    expect(policy.refusal("127.0.0.1", ["127.0.0.1"])).toBeUndefined();
    expect(policy.refusal("127.0.0.2", ["127.0.0.2"])).toContain("127.0.0.2");
    expect(policy.refusal("fd12::1", ["fd12::1"])).toBeUndefined();
    expect(policy.refusal("localhost", ["127.0.0.1", "::1"])).toContain("internal");
  });

  it.each(["http://x", "10.0.0.0/33", "a b", "::1/200", "*"])("refuses the setting entry %j", (entry) => {
    expect(() => new WebhookPolicy([entry])).toThrow(/WEBHOOK_ALLOWED_HOSTS/);
  });
});

describe("webhookRefusal", () => {
  it.each([
    ["http://169.254.169.254/latest/meta-data", "169.254.169.254"],
    ["http://127.0.0.1:8080/hook", "127.0.0.1"],
    ["http://[::1]/hook", "::1"],
    ["http://0x7f.1/hook", "127.0.0.1"],
    ["http://2130706433/hook", "127.0.0.1"],
    ["https://[::ffff:a9fe:a9fe]/", "::ffff:a9fe:a9fe"],
    ["http://localhost:3000/", "internal"],
    ["http://[fe80::1%25eth0]/", "not a valid URL"],
  ])("refuses %s", async (url, reason) => {
    expect(await webhookRefusal(url, strict)).toContain(reason);
  });

  it("lets a public address through", async () => {
    expect(await webhookRefusal("https://8.8.8.8/hook", strict)).toBeUndefined();
  });
});
