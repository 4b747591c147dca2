// Server-Sent Events of the chat and analysis streams. Each event is `event: <name>` plus one `data:` line
// of JSON. A stream that fails after it started ends with an `error` event whose data is the error body.
import { z } from 'zod';
import { JobId } from './common';
import { ConversationId } from './chat';
import { ErrorBody } from './errors';
import { JobResultResponseByType } from './jobs';
import { UsageCounts } from './usage';

export const ChatTokenEvent = z
  .object({ type: z.literal('token'), content: z.string() })
  .meta({ id: 'ChatTokenEvent', description: 'Event `token`: a text chunk of the reply.' });
export type ChatTokenEvent = z.infer<typeof ChatTokenEvent>;

export const ChatNodeStartEvent = z
  .object({ type: z.literal('node_start'), node: z.string().meta({ examples: ['research'] }) })
  .meta({ id: 'ChatNodeStartEvent', description: 'Event `node_start`: a processing phase begins.' });
export type ChatNodeStartEvent = z.infer<typeof ChatNodeStartEvent>;

export const ChatToolStartEvent = z
  .object({ type: z.literal('tool_start'), tool: z.string().meta({ examples: ['market_data'] }) })
  .meta({ id: 'ChatToolStartEvent', description: 'Event `tool_start`: a tool execution begins.' });
export type ChatToolStartEvent = z.infer<typeof ChatToolStartEvent>;

export const ChatToolEndEvent = z
  .object({ type: z.literal('tool_end'), tool: z.string().meta({ examples: ['market_data'] }) })
  .meta({ id: 'ChatToolEndEvent', description: 'Event `tool_end`: a tool execution ends.' });
export type ChatToolEndEvent = z.infer<typeof ChatToolEndEvent>;

export const ChatProgressEvent = z.object({ type: z.literal('progress'), content: z.string() }).meta({
  id: 'ChatProgressEvent',
  description:
    'Event `progress`: a short note the model writes between tool calls about what it is doing (on models that return such notes as thinking, e.g. Claude Sonnet 5.5). Shown while tools run; not part of the reply text.',
});
export type ChatProgressEvent = z.infer<typeof ChatProgressEvent>;

export const ChatDoneEvent = z
  .object({
    type: z.literal('done'),
    conversation_id: ConversationId,
    usage: UsageCounts.optional().meta({ description: 'What this reply cost (absent from replies recorded before usage was reported).' }),
  })
  .meta({ id: 'ChatDoneEvent', description: 'Event `done`: the reply is complete; reuse conversation_id to continue.' });
export type ChatDoneEvent = z.infer<typeof ChatDoneEvent>;

/** The data of every successful chat event; `type` always equals the SSE event name. */
export const ChatStreamEvent = z
  .discriminatedUnion('type', [ChatTokenEvent, ChatNodeStartEvent, ChatToolStartEvent, ChatToolEndEvent, ChatProgressEvent, ChatDoneEvent])
  .meta({ id: 'ChatStreamEvent', description: 'Data of a chat stream event; `type` equals the event name.' });
export type ChatStreamEvent = z.infer<typeof ChatStreamEvent>;

/**
 * Event name → data schema of the chat stream. `error` is the one event whose data does not carry its own
 * name in `type`: its data is the standard error body, where `type` is the error category (internal_error,
 * gateway_timeout, …). The categories never collide with chat event names, so a client that switches on
 * the data's `type` alone can still tell them apart.
 */
export const ChatStreamEvents = {
  token: ChatTokenEvent,
  node_start: ChatNodeStartEvent,
  tool_start: ChatToolStartEvent,
  tool_end: ChatToolEndEvent,
  progress: ChatProgressEvent,
  done: ChatDoneEvent,
  error: ErrorBody,
} as const;
export type ChatStreamEventName = keyof typeof ChatStreamEvents;

export const AnalysisSynthesisChunkEvent = z
  .object({ chunk: z.string() })
  .meta({ id: 'AnalysisSynthesisChunkEvent', description: 'Event `synthesis_chunk`: part of the generated text.' });
export type AnalysisSynthesisChunkEvent = z.infer<typeof AnalysisSynthesisChunkEvent>;

export const AnalysisDoneEvent = z
  .object({ job_id: JobId, status: z.literal('completed') })
  .meta({ id: 'AnalysisDoneEvent', description: "Event `done`: the analysis is complete; its result is also at the job's result URL." });
export type AnalysisDoneEvent = z.infer<typeof AnalysisDoneEvent>;

/** Event name → data schema of the analysis stream (no `type` field in the data, as in the spec). */
export const AnalysisStreamEvents = {
  synthesis_chunk: AnalysisSynthesisChunkEvent,
  done: AnalysisDoneEvent,
  error: ErrorBody,
} as const;
export type AnalysisStreamEventName = keyof typeof AnalysisStreamEvents;

const EVENT_NAME = /^[A-Za-z0-9_.-]+$/;
/** Event ids are echoed back by clients in Last-Event-ID: visible ASCII only, so they survive any header. */
const EVENT_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * One SSE frame: `event: <name>\ndata: <json>\n\n`, preceded by `id: <id>\n` when the event has an id (a
 * client that reconnects sends the last id it saw in Last-Event-ID). JSON.stringify escapes line breaks inside
 * strings, so the data is always a single line and needs no splitting into several `data:` lines.
 */
export function formatSse(event: string, data: unknown, id?: string): string {
  if (!EVENT_NAME.test(event)) throw new TypeError(`invalid SSE event name ${JSON.stringify(event)}`);
  if (id !== undefined && !EVENT_ID.test(id)) throw new TypeError(`invalid SSE event id ${JSON.stringify(id)}`);
  // JSON.stringify answers undefined for undefined, a function or a symbol, whatever its declared type says.
  const json = JSON.stringify(data) as string | undefined;
  if (json === undefined) throw new TypeError(`SSE data of event ${event} is not JSON-serialisable`);
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${json}\n\n`;
}

// The event stream of one job (GET /api/jobs/{job_type}/{job_id}/events). Every event carries `id: <seq>`, the
// job's event number (increasing within the job; a later attempt's numbers sort after an earlier one's), which a
// reconnecting client sends back in Last-Event-ID.

const jobEventState = {
  job_id: JobId,
  progress: z
    .int()
    .min(0)
    .max(100)
    .meta({ description: 'Percent complete, 0 to 100; never decreases.', examples: [45] }),
  currently_working_on: z.string().meta({ description: 'Human-readable current step.', examples: ['Looking up market data'] }),
};

export const JobStatusEvent = z.object({ ...jobEventState, status: z.enum(['pending', 'running']) }).meta({
  id: 'JobStatusEvent',
  description:
    "Event `status`: the job's state when the stream starts (unless Last-Event-ID shows the client has it), and every change of status.",
});
export type JobStatusEvent = z.infer<typeof JobStatusEvent>;

export const JobProgressEvent = z
  .object(jobEventState)
  .meta({ id: 'JobProgressEvent', description: 'Event `progress`: the progress or the current step changed; the status did not.' });
export type JobProgressEvent = z.infer<typeof JobProgressEvent>;

export const JobResultEvent = z
  .union([JobResultResponseByType.news, JobResultResponseByType['stock-report'], JobResultResponseByType.analysis])
  .meta({
    id: 'JobResultEvent',
    description: 'Event `result`: the job completed; the data is what the result URL answers. The stream then ends.',
  });
export type JobResultEvent = z.infer<typeof JobResultEvent>;

export const JobErrorEvent = ErrorBody.extend({ job_id: JobId }).meta({
  id: 'JobErrorEvent',
  description:
    "Event `error`: the job failed. The data is the error body of the job's error (its type, the type's HTTP status and the reason) with the job id. The stream then ends.",
});
export type JobErrorEvent = z.infer<typeof JobErrorEvent>;

/** Event name → data schema of a job's event stream. */
export const JobStreamEvents = {
  status: JobStatusEvent,
  progress: JobProgressEvent,
  result: JobResultEvent,
  error: JobErrorEvent,
} as const;
export type JobStreamEventName = keyof typeof JobStreamEvents;

/** Request headers of the job event stream. */
export const JobEventsHeaders = z
  .object({
    'Last-Event-ID': z
      .string()
      .regex(/^\d{1,9}$/, { error: 'must be the id of an event of this job stream, such as 2004.' })
      .optional()
      .meta({
        description:
          "Resume: the id of the last event received (browsers' EventSource sends it when it reconnects). Only newer events are sent; when the client already has the final event of a finished job the answer is 204, which stops EventSource from reconnecting. E.g. `2004` (no example value: a try-it client would send it by default).",
      }),
  })
  .meta({ id: 'JobEventsHeaders', description: 'Request headers of GET /api/jobs/{job_type}/{job_id}/events.' });
export type JobEventsHeaders = z.infer<typeof JobEventsHeaders>;
