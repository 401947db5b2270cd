import type { BaseCallbackHandler } from "@langchain/core/callbacks/base";
import type { LangChainTracer as LangChainTracerType } from "@langchain/core/tracers/tracer_langchain";
import type { Client, RunTree as RunTreeType } from "langsmith";
import { isEnvTracingEnabled } from "langsmith/lib/env";
import { getLangSmithEnvironmentVariable } from "langsmith/lib/utils/env";
import type { ServerModule } from "../app.ts";
import type { GraphRegistry } from "../graphs/types.ts";
import { type OtelExport, otelExportConfigured, startOtelExport } from "./otel.ts";

/** Whether runs are sent to LangSmith: LangChain's own switch (`LANGSMITH_TRACING=true`, …). */
export function langSmithTracingEnabled(): boolean {
  return isEnvTracingEnabled();
}

type FlushableClient = Partial<Pick<Client, "awaitPendingTraceBatches">>;

/** How long shutdown waits for traces, so an unreachable LangSmith cannot hold a pod in Terminating. */
const FLUSH_TIMEOUT_MS = 5000;

/**
 * Delivers the traces of finished runs, through the graphs' own instances of LangChain and
 * langsmith: first LangChain's background callbacks (which end OTel spans and queue LangSmith
 * runs), then langsmith's shared client (which LangChain's tracer adopts from the run tree
 * LangGraph puts around each step) and LangChain's default one, and the OTel batch.
 */
async function deliverTraces(graphs: GraphRegistry, langSmith: boolean, otel: OtelExport | undefined): Promise<void> {
  const { awaitAllCallbacks } = (await graphs.importShared("@langchain/core/callbacks/promises")) as {
    awaitAllCallbacks: () => Promise<void>;
  };
  await awaitAllCallbacks();
  const clients = new Set<FlushableClient>();
  if (langSmith) {
    const { RunTree } = (await graphs.importShared("langsmith")) as { RunTree: typeof RunTreeType };
    const { LangChainTracer } = (await graphs.importShared("@langchain/core/tracers/tracer_langchain")) as {
      LangChainTracer: typeof LangChainTracerType;
    };
    clients.add(RunTree.getSharedClient()).add(new LangChainTracer().client as FlushableClient);
  }
  await Promise.all([...[...clients].map((client) => client.awaitPendingTraceBatches?.()), otel?.shutdown()]);
}

function withinTimeout(work: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`traces not delivered within ${FLUSH_TIMEOUT_MS} ms`)), FLUSH_TIMEOUT_MS);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

export interface TracingModule extends ServerModule {
  /** Handlers every run gets; filled when the module starts (the settings may come from langgraph.json's `env`). */
  readonly callbacks: BaseCallbackHandler[];
}

/**
 * Tracing. LangSmith tracing is LangChain's: with `LANGSMITH_TRACING=true` every run sends its tree
 * to LangSmith by itself, with the run's metadata (`thread_id` …) on every child run. This module
 * adds OpenTelemetry export (`otel.ts`) and delivers what is still queued at shutdown
 * (for up to 5 s).
 */
export function tracingModule(): TracingModule {
  const callbacks: BaseCallbackHandler[] = [];
  let langSmith = false;
  let otel: OtelExport | undefined;
  return {
    name: "tracing",
    callbacks,
    start(ctx) {
      langSmith = langSmithTracingEnabled();
      if (langSmith) {
        const endpoint = getLangSmithEnvironmentVariable("ENDPOINT") ?? "https://api.smith.langchain.com";
        const project = getLangSmithEnvironmentVariable("PROJECT") ?? "default";
        ctx.logger.info({ endpoint, project }, "tracing runs to LangSmith");
      }
      if (otelExportConfigured()) {
        otel = startOtelExport(ctx.logger);
        callbacks.push(otel.tracer);
        const endpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
        ctx.logger.info({ endpoint }, "exporting run spans over OTLP");
      }
    },
    async stop(ctx) {
      if (!langSmith && !otel) return;
      // Stopped after the runs module: the last runs have ended and their traces are queued.
      try {
        await withinTimeout(deliverTraces(ctx.graphs, langSmith, otel));
      } catch (error) {
        ctx.logger.warn({ err: error }, "could not deliver the last traces");
      }
      callbacks.length = 0;
      otel = undefined;
    },
  };
}
