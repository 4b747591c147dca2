// The spans of messages (@fin/tracing), when traces are exported: one PRODUCER span per message sent, a child of
// the trace its headers carry (the outbox row's, written by the request or job that made the event), whose
// context replaces the header, so the consumer's span is the producer's child. Without tracing, messages go out
// as they are.
import { currentTrace, formatTraceparent, parseTraceparent, TRACEPARENT_HEADER } from '@fin/log';
import { endSpan, FIN_ATTRIBUTES, SpanKind, startSpan, tracingEnabled, type Attributes, type Span } from '@fin/tracing';
import { type OutgoingMessage } from './bus';

/** The attributes of a message's spans (OpenTelemetry's messaging conventions); the key is the job id on job topics. */
export function messageAttributes(topic: string, key: string | null, operation: 'send' | 'process'): Attributes {
  return {
    'messaging.system': 'kafka',
    'messaging.operation.type': operation,
    'messaging.destination.name': topic,
    ...(key === null ? {} : { 'messaging.kafka.message.key': key }),
  };
}

/** A job event's job id, for the consumer's span. */
export function jobAttributes(payload: unknown): Attributes {
  const jobId = (payload as { job_id?: unknown } | null)?.job_id;
  return typeof jobId === 'string' ? { [FIN_ATTRIBUTES.jobId]: jobId } : {};
}

/** Sends `messages` through `send` inside a PRODUCER span each (see above). */
export async function sendTraced(
  messages: readonly OutgoingMessage[],
  send: (messages: readonly OutgoingMessage[]) => Promise<void>,
): Promise<void> {
  if (!tracingEnabled()) return send(messages);
  const spans: Span[] = [];
  const traced = messages.map((message) => {
    const headers = message.headers ?? {};
    const parent = parseTraceparent(headers[TRACEPARENT_HEADER]) ?? currentTrace();
    const live = startSpan(`send ${message.topic}`, parent, {
      kind: SpanKind.PRODUCER,
      attributes: messageAttributes(message.topic, message.key, 'send'),
    });
    if (live === undefined) return message;
    spans.push(live.span);
    return { ...message, headers: { ...headers, [TRACEPARENT_HEADER]: formatTraceparent(live.context) } };
  });
  try {
    await send(traced);
  } catch (error) {
    for (const span of spans) endSpan(span, error);
    throw error;
  }
  for (const span of spans) endSpan(span);
}
