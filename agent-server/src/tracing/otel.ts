import type { Logger } from "@agentplane/common";
import { BaseTracer, type Run } from "@langchain/core/tracers/base";
import {
  type Attributes,
  DiagLogLevel,
  diag,
  ROOT_CONTEXT,
  type Span,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";

/**
 * OpenTelemetry export of runs. LangSmith's own OTel mode only exports `traceable` functions,
 * not LangChain's callback runs (what LangGraph produces), so the server turns the run tree into
 * spans itself: one span per run — the graph, each node, model and tool call — parented as the
 * run tree is, sent over OTLP/HTTP (protobuf) with the standard `OTEL_*` settings.
 */

/** Export is on when an OTLP endpoint is set, unless `OTEL_SDK_DISABLED=true`. */
export function otelExportConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === "true") return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

const MAX_ATTRIBUTE_LENGTH = 1000;

/** Span attributes of a run: its kind, tags and scalar metadata, in LangSmith's OTel names. */
export function runAttributes(run: Run): Attributes {
  const attributes: Attributes = { "langsmith.span.kind": run.run_type };
  if (run.tags?.length) attributes["langsmith.span.tags"] = run.tags.join(", ");
  for (const [key, value] of Object.entries(run.extra?.metadata ?? {})) {
    if (typeof value === "string") attributes[`langsmith.metadata.${key}`] = value.slice(0, MAX_ATTRIBUTE_LENGTH);
    else if (typeof value === "number" || typeof value === "boolean") attributes[`langsmith.metadata.${key}`] = value;
  }
  // The GenAI semantic conventions' name for a conversation, which is what a thread is.
  const threadId = run.extra?.metadata?.thread_id;
  if (typeof threadId === "string") attributes["gen_ai.conversation.id"] = threadId;
  return attributes;
}

/** A LangChain tracer that opens a span when a run starts and ends it when the run ends. */
export class OtelRunTracer extends BaseTracer {
  name = "agentplane_otel_tracer";
  readonly #tracer: Tracer;
  readonly #spans = new Map<string, Span>();

  constructor(tracer: Tracer) {
    super();
    this.#tracer = tracer;
  }

  protected async persistRun(): Promise<void> {}

  override onRunCreate(run: Run): void {
    const parent = run.parent_run_id === undefined ? undefined : this.#spans.get(run.parent_run_id);
    const span = this.#tracer.startSpan(
      run.name,
      { startTime: run.start_time, attributes: runAttributes(run) },
      // Parented by the run tree, never by whatever context happens to be active.
      parent ? trace.setSpan(ROOT_CONTEXT, parent) : ROOT_CONTEXT,
    );
    this.#spans.set(run.id, span);
  }

  override onRunUpdate(run: Run): void {
    const span = this.#spans.get(run.id);
    if (!span) return;
    this.#spans.delete(run.id);
    if (run.error) span.setStatus({ code: SpanStatusCode.ERROR, message: run.error.slice(0, MAX_ATTRIBUTE_LENGTH) });
    span.end(run.end_time);
  }
}

export interface OtelExport {
  tracer: OtelRunTracer;
  /** Sends the spans still batched, then stops. */
  shutdown(): Promise<void>;
}

/** The OTel SDK's own warnings and errors (a failed export, a bad endpoint) into the server's log. */
function logOtelDiagnostics(logger: Logger): void {
  const warn = (message: string, ...args: unknown[]) =>
    logger.warn(args.length > 0 ? { details: args } : {}, `OpenTelemetry: ${message}`);
  const ignore = () => {};
  diag.setLogger({ error: warn, warn, info: ignore, debug: ignore, verbose: ignore }, DiagLogLevel.WARN);
}

export function startOtelExport(logger: Logger): OtelExport {
  logOtelDiagnostics(logger);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ "service.name": "agentplane-agent-server" }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  return { tracer: new OtelRunTracer(provider.getTracer("agentplane")), shutdown: () => provider.shutdown() };
}
