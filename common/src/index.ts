export * from "./api-keys.ts";
export * from "./docs.ts";
export * from "./errors.ts";
export * from "./http.ts";
export * from "./logger.ts";
export * from "./openapi.ts";
export * from "./route.ts";
export * from "./validation.ts";
