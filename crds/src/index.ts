export * from "./constants.ts";
export * from "./manifests.ts";
export * from "./names.ts";
export * from "./quantity.ts";
export * from "./schemas.ts";
export * from "./tenant-policy.ts";
