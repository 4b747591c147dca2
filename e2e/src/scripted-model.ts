// The fake Claude of the fault tests: the offline analyst (so the real engine path runs: tool call, tool result,
// structured answer), with hooks that let a test hold, delay, break or tag the turns of one particular job.
// A job is recognised by a marker the test puts in the request's custom data (or prompt, or message), which the
// engine copies into what it sends the model.
import { offlineAnalyst } from '@fin/ai';
import {
  systemText,
  toolResults,
  type HandlerContext,
  type MessageReply,
  type MessagesRequestBody,
  type RecordedRequest,
  type Reply,
} from '@fin/fakes';
import { randomBytes } from 'node:crypto';

/** A fresh run id: markers of one test never match another's. */
export function newRun(): string {
  return randomBytes(4).toString('hex');
}

/** The marker of item `index` of run `run`: letters and digits only, so it survives any prompt template. */
export function marker(run: string, index: number): string {
  return `fx${run}x${index}`;
}

const MARKER = /\bfx[0-9a-f]{8}x\d+\b/;

/** The marker a model request carries (in the system prompt, where custom data goes, or in a message). */
function markerOf(body: MessagesRequestBody): string | undefined {
  return MARKER.exec(systemText(body))?.[0] ?? MARKER.exec(JSON.stringify(body.messages))?.[0];
}

/** Whether the request answers tool calls: for the analyst, the turn that writes the answer. */
function isAnswerTurn(body: MessagesRequestBody): boolean {
  return toolResults(body).length > 0;
}

type ModelRequest = RecordedRequest & { body: MessagesRequestBody };

interface TurnInfo {
  marker: string | undefined;
  /** 1 for a marker's first request, 2 for its second, … */
  call: number;
  /** How many answer turns this marker has had, this one included (0 while tools are still being called). */
  answerTurn: number;
  answer: boolean;
}

/** What a hook makes of a turn: nothing (the analyst answers), another reply, or the analyst's reply changed. */
type TurnHook = (
  turn: TurnInfo,
  request: ModelRequest,
) => Promise<Reply | ((reply: Reply) => Reply) | undefined> | Reply | ((reply: Reply) => Reply) | undefined;

export interface ScriptedModel {
  handler: (request: ModelRequest, context: HandlerContext) => Promise<Reply>;
  /** Replaces the hook (undefined: the analyst answers everything). */
  setHook(hook: TurnHook | undefined): void;
  /** Answer turns seen per marker. */
  answerTurns(marker: string): number;
  calls(marker: string): number;
}

export function scriptedModel(): ScriptedModel {
  const analyst = offlineAnalyst();
  const calls = new Map<string, number>();
  const answers = new Map<string, number>();
  let hook: TurnHook | undefined;
  return {
    async handler(request, context) {
      const found = markerOf(request.body);
      const answer = isAnswerTurn(request.body);
      let turn: TurnInfo = { marker: undefined, call: 0, answerTurn: 0, answer };
      if (found !== undefined) {
        calls.set(found, (calls.get(found) ?? 0) + 1);
        if (answer) answers.set(found, (answers.get(found) ?? 0) + 1);
        turn = { marker: found, call: calls.get(found) ?? 0, answerTurn: answers.get(found) ?? 0, answer };
      }
      const decided = await hook?.(turn, request);
      if (decided !== undefined && typeof decided !== 'function') return decided;
      const reply = await analyst(request, context);
      return decided === undefined ? reply : decided(reply);
    },
    setHook(next) {
      hook = next;
    },
    answerTurns: (key) => answers.get(key) ?? 0,
    calls: (key) => calls.get(key) ?? 0,
  };
}

/** The analyst's news answer with `tag` appended to every title, so a test can tell which run wrote a result. */
export function tagNews(tag: string): (reply: Reply) => Reply {
  return (reply) => {
    if (!('content' in reply)) return reply;
    const block = reply.content[0];
    if (block?.type !== 'text') return reply;
    const value = JSON.parse(block.text) as { news: { title: string }[] };
    const tagged: MessageReply = {
      ...reply,
      content: [{ ...block, text: JSON.stringify({ news: value.news.map((item) => ({ ...item, title: `${item.title} [${tag}]` })) }) }],
    };
    return tagged;
  };
}

/** Waits `ms` (a model that takes its time). */
export function think(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
