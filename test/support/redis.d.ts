import { type RedisClientType } from "redis";
export declare function testRedisUrl(): string;
/** A key prefix unique to the caller, so test files sharing one Redis never see each other's keys. */
export declare function uniquePrefix(label?: string): string;
export declare function connectTestRedis(): Promise<RedisClientType>;
