import { describe } from "vitest";
import { storageContract } from "./contract.ts";
import { createMemoryStorage } from "./memory.ts";

describe("memory storage", () => {
  storageContract(async () => createMemoryStorage());
});
