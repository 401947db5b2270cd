import { randomUUID } from "node:crypto";
import { createClient } from "redis";
import { inject } from "vitest";
export function testRedisUrl() {
    return inject("redisUrl");
}
/** A key prefix unique to the caller, so test files sharing one Redis never see each other's keys. */
export function uniquePrefix(label = "t") {
    return `${label}:${randomUUID().slice(0, 8)}:`;
}
export async function connectTestRedis() {
    const client = createClient({ url: testRedisUrl() });
    await client.connect();
    return client;
}
//# sourceMappingURL=redis.js.map