import { deflateRawSync, inflateRawSync } from "node:zlib";

/**
 * A run's `json` field (`redis-scripts.ts`: the run record without its status) compressed with a
 * preset dictionary of what run records are made of, as `z` + base64 (the run store's client
 * reads text). Runs are kept as long as their thread, so their records are most of what a long
 * conversation keeps besides its checkpoints: ~800 bytes of JSON per run of the example graph,
 * ~350 this way. Records written before start with `{` and are read as they are.
 *
 * The dictionary is part of the stored format: it never changes (another one needs another prefix).
 */
const DICTIONARY = Buffer.from(
  [
    '"interrupt_before":null,"interrupt_after":null,"webhook":null,"feedback_keys":null,"temporary":false}}',
    '"context":{},"stream_mode":["values","updates","messages-tuple","events","debug","custom"],"subgraphs":false,"resumable":false,',
    '"checkpoint_id":"","checkpoint_ns":"","checkpoint":null,"on_disconnect":"cancel","after_seconds":',
    '"multitask_strategy":"enqueue","multitask_strategy":"reject","kwargs":{"input":null,"input":{"messages":[{"role":"human","type":"human","content":"',
    '"}]},"command":null,"config":{"configurable":{"run_id":"","thread_id":"","graph_id":"","assistant_id":"',
    '{"run_id":"","thread_id":"","assistant_id":"","created_at":"20","metadata":{"created_by":"system","graph_id":"',
  ].join(""),
);

const OPTIONS = { dictionary: DICTIONARY };
const COMPRESSED = "z";

export function encodeRunJson(json: string): string {
  return COMPRESSED + deflateRawSync(json, OPTIONS).toString("base64");
}

export function decodeRunJson(stored: string): string {
  return stored.startsWith(COMPRESSED)
    ? inflateRawSync(Buffer.from(stored.slice(1), "base64"), OPTIONS).toString()
    : stored;
}
