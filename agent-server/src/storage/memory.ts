import { MemoryAssistantStore } from "../assistants/memory-store.ts";
import { MemoryCheckpointer } from "../checkpoint/memory.ts";
import { MemoryStore } from "../long-term-store/memory-store.ts";
import type { LongTermStoreOptions } from "../long-term-store/store.ts";
import { CheckpointValues } from "../stream/references.ts";
import { MemoryThreadStore } from "../threads/memory-store.ts";
import type { Storage } from "./types.ts";

/** Everything in process memory: `agent-server dev` and tests. Lost on exit. */
export function createMemoryStorage(storeOptions: LongTermStoreOptions = {}): Storage {
  const store = new MemoryStore(storeOptions);
  const checkpointer = new MemoryCheckpointer();
  return {
    kind: "memory",
    assistants: new MemoryAssistantStore(),
    threads: new MemoryThreadStore(),
    checkpointer,
    checkpointValues: new CheckpointValues(checkpointer),
    store,
    ping: async () => {},
    close: async () => store.stop(),
  };
}
