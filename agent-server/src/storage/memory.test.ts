import { describe } from "vitest";
import { createMemoryStorage } from "./memory.ts";
import { storageContract } from "./testing/contract.ts";

describe("memory storage", () => {
  storageContract(async () => createMemoryStorage());
});
