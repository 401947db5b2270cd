import type { Logger } from "@agentplane/common";
import type { Request, Response } from "express";
import type { z } from "zod";
import { requestAuth } from "../../custom-auth/module.ts";
import { forwardedHeaders } from "../../http/configurable-headers.ts";
import type { RunCreate } from "../build.ts";
import type { JoinStreamQuerySchema, Run } from "../schemas.ts";
import type { RunService } from "../service.ts";
import { respondWithOutcome, respondWithStream } from "./respond.ts";

const runLocation = (run: Run, stateless: boolean) =>
  stateless ? `/runs/${run.run_id}` : `/threads/${run.thread_id}/runs/${run.run_id}`;

/** `Last-Event-ID` → id of the last event the client has; absent or `-`: replay everything. */
function lastEventId(req: Request): number {
  const header = req.header("last-event-id");
  const id = header === undefined ? Number.NaN : Number.parseInt(header, 10);
  return Number.isInteger(id) && id >= -1 ? id : -1;
}

/**
 * What the run-creating and stream-joining endpoints do, shared by the thread and the stateless
 * routes (`threadId` undefined: a stateless run).
 */
export function runHandlers(
  service: RunService,
  { heartbeatMs, stallMs, logger }: { heartbeatMs: number; stallMs: number; logger: Logger },
) {
  const create = async (threadId: string | undefined, body: RunCreate, req: Request, res: Response) => {
    const run = await service.create(threadId, body, forwardedHeaders(req), { auth: requestAuth(req) });
    res.setHeader("Content-Location", runLocation(run, threadId === undefined));
    return run;
  };
  const stream = async (threadId: string | undefined, body: RunCreate, req: Request, res: Response) => {
    const run = await service.create(threadId, body, forwardedHeaders(req), { auth: requestAuth(req) });
    const headers: Record<string, string> = { "Content-Location": runLocation(run, threadId === undefined) };
    if (run.kwargs.resumable) headers.Location = `${runLocation(run, threadId === undefined)}/stream`;
    await respondWithStream(service, res, run, {
      headers,
      afterId: -1,
      cancelOnDisconnect: body.on_disconnect === "cancel",
      heartbeatMs,
      stallMs,
      logger,
    });
  };
  const wait = async (threadId: string | undefined, body: RunCreate, req: Request, res: Response) => {
    const run = await service.create(threadId, body, forwardedHeaders(req), { auth: requestAuth(req) });
    await respondWithOutcome(service, res, run, {
      headers: { "Content-Location": runLocation(run, threadId === undefined) },
      cancelOnDisconnect: body.on_disconnect === "cancel",
      heartbeatMs,
      logger,
    });
  };
  const joinStream = async (
    threadId: string | undefined,
    runId: string,
    query: z.infer<typeof JoinStreamQuerySchema>,
    req: Request,
    res: Response,
  ) => {
    const run = await service.get(threadId, runId, requestAuth(req));
    await respondWithStream(service, res, run, {
      headers: {},
      afterId: lastEventId(req),
      modes: query.stream_mode,
      cancelOnDisconnect: query.cancel_on_disconnect,
      heartbeatMs,
      stallMs,
      logger,
    });
  };

  return { create, stream, wait, joinStream };
}

export type RunHandlers = ReturnType<typeof runHandlers>;
