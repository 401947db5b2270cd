import { describe, expect, it } from "vitest";
import { ConfigError } from "../config.ts";
import { runSettingsFromEnv } from "./settings.ts";

describe("runSettingsFromEnv", () => {
  it("defaults to production values", () => {
    expect(runSettingsFromEnv({})).toEqual({
      leaseMs: 15_000,
      maxAttempts: 3,
      pollMs: 1000,
      heartbeatMs: 5000,
      stallMs: 60_000,
      maxLoggedEvents: 100_000,
    });
  });

  it("reads each setting from its variable", () => {
    const env = {
      RUN_LEASE_MS: "2000",
      RUN_MAX_ATTEMPTS: "5",
      RUN_POLL_MS: "50",
      STREAM_HEARTBEAT_MS: "250",
      STREAM_STALL_TIMEOUT_MS: "3000",
      RUN_EVENT_LOG_MAX_EVENTS: "500",
    };
    expect(runSettingsFromEnv(env)).toEqual({
      leaseMs: 2000,
      maxAttempts: 5,
      pollMs: 50,
      heartbeatMs: 250,
      stallMs: 3000,
      maxLoggedEvents: 500,
    });
  });

  it("accepts the bounds of each range", () => {
    const low = {
      RUN_LEASE_MS: "100",
      RUN_MAX_ATTEMPTS: "1",
      RUN_POLL_MS: "10",
      STREAM_HEARTBEAT_MS: "100",
      STREAM_STALL_TIMEOUT_MS: "100",
      RUN_EVENT_LOG_MAX_EVENTS: "100",
    };
    expect(runSettingsFromEnv(low)).toEqual({
      leaseMs: 100,
      maxAttempts: 1,
      pollMs: 10,
      heartbeatMs: 100,
      stallMs: 100,
      maxLoggedEvents: 100,
    });
    const high = {
      RUN_LEASE_MS: "3600000",
      RUN_MAX_ATTEMPTS: "100",
      RUN_POLL_MS: "60000",
      STREAM_HEARTBEAT_MS: "60000",
      STREAM_STALL_TIMEOUT_MS: "3600000",
      RUN_EVENT_LOG_MAX_EVENTS: "100000000",
    };
    expect(runSettingsFromEnv(high)).toEqual({
      leaseMs: 3_600_000,
      maxAttempts: 100,
      pollMs: 60_000,
      heartbeatMs: 60_000,
      stallMs: 3_600_000,
      maxLoggedEvents: 100_000_000,
    });
  });

  it.each([
    ["RUN_LEASE_MS", "99", "RUN_LEASE_MS must be at least 100"],
    ["RUN_LEASE_MS", "3600001", "RUN_LEASE_MS must be at most 3600000"],
    ["RUN_MAX_ATTEMPTS", "0", "RUN_MAX_ATTEMPTS must be at least 1"],
    ["RUN_MAX_ATTEMPTS", "101", "RUN_MAX_ATTEMPTS must be at most 100"],
    ["RUN_MAX_ATTEMPTS", "2.5", "RUN_MAX_ATTEMPTS must be an integer"],
    ["RUN_POLL_MS", "9", "RUN_POLL_MS must be at least 10"],
    ["RUN_POLL_MS", "soon", "RUN_POLL_MS must be a number"],
    ["STREAM_HEARTBEAT_MS", "60001", "STREAM_HEARTBEAT_MS must be at most 60000"],
    ["STREAM_STALL_TIMEOUT_MS", "99", "STREAM_STALL_TIMEOUT_MS must be at least 100"],
    ["RUN_EVENT_LOG_MAX_EVENTS", "99", "RUN_EVENT_LOG_MAX_EVENTS must be at least 100"],
    // An empty variable is not "unset": it reads as 0 and is refused, rather than silently defaulted.
    ["RUN_LEASE_MS", "", "RUN_LEASE_MS must be at least 100"],
  ])("refuses %s=%j with a ConfigError naming the variable", (name, value, message) => {
    const read = () => runSettingsFromEnv({ [name]: value });
    expect(read).toThrow(ConfigError);
    expect(read).toThrow(message);
  });
});
