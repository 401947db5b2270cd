import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { microTime } from "../controller-runtime/leader.ts";
import type { KubeClient, KubeObject } from "./client.ts";
import { resourcePath, resources } from "./resources.ts";

export type EventType = "Normal" | "Warning";

/** How many events may wait to be sent; beyond that new ones are dropped (client-go does the same). */
const MAX_PENDING = 200;
const SENDERS = 2;
/** The apiserver's limit on `note`, counted in bytes (Go's len), not characters. */
export const NOTE_MAX_BYTES = 1024;

/** `text` cut to at most `maxBytes` of UTF-8, never inside a character. */
export function truncateUtf8(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the character that does not fit.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}

/**
 * Records events.k8s.io/v1 Events on an object, best effort: a small queue with two senders, so a
 * burst of reconciles neither waits for events nor floods the API server with parallel requests.
 */
export class EventRecorder {
  private readonly kube: KubeClient;
  private readonly pending: object[] = [];
  private sending = 0;
  private dropped = 0;
  private readonly controller: string;
  private readonly instance: string;
  private readonly log: Logger;

  constructor(kube: KubeClient, controller: string, instance: string, log: Logger) {
    this.kube = kube;
    this.controller = controller;
    this.instance = instance;
    this.log = log;
  }

  get droppedCount(): number {
    return this.dropped;
  }

  record(regarding: KubeObject, type: EventType, reason: string, action: string, note: string): void {
    const meta = regarding.metadata ?? {};
    const namespace = meta.namespace ?? "default";
    const event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: `${meta.name}.${randomBytes(8).toString("hex")}`, namespace },
      eventTime: microTime(new Date()),
      reportingController: this.controller,
      reportingInstance: this.instance,
      action,
      reason,
      note: truncateUtf8(note, NOTE_MAX_BYTES),
      type,
      regarding: { apiVersion: regarding.apiVersion, kind: regarding.kind, name: meta.name, namespace, uid: meta.uid },
    };
    if (this.pending.length >= MAX_PENDING) {
      this.dropped++;
      return;
    }
    this.pending.push(event);
    if (this.sending < SENDERS) void this.send();
  }

  private async send(): Promise<void> {
    this.sending++;
    try {
      for (let event = this.pending.shift(); event; event = this.pending.shift()) {
        const namespace = (event as { metadata: { namespace: string } }).metadata.namespace;
        try {
          await this.kube.create(resourcePath(resources.event, namespace), event);
        } catch (error) {
          this.log.debug({ err: error }, "could not record event");
        }
      }
    } finally {
      this.sending--;
    }
  }
}
