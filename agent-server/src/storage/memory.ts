import { MemoryAssistantStore } from "../assistants/memory-store.ts";
import { MemoryCheckpointer } from "../checkpoint/memory.ts";
import { MemoryStore } from "../long-term-store/memory-store.ts";
import type { LongTermStoreOptions } from "../long-term-store/store.ts";
import { MemoryThreadStore } from "../threads/memory-store.ts";
import type { Storage } from "./types.ts";

/** Everything in process memory: `agent-server dev` and tests. Lost on exit. */
export function createMemoryStorage(storeOptions: LongTermStoreOptions = {}): Storage {
  const store = new MemoryStore(storeOptions);
  return {
    kind: "memory",
    assistants: new MemoryAssistantStore(),
    threads: new MemoryThreadStore(),
    checkpointer: new MemoryCheckpointer(),
    store,
    ping: async () => {},
    close: async () => store.stop(),
  };
}
