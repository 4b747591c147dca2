// The model the ai-cost scenario bills: the offline analyst (packages/offline), which answers every product from
// the sample data, made to research the way a model with web search does. A run of the analyst alone is one
// round of market_data calls and an answer; a researching model also searches the web once (5 results, billed
// at their size by the fake) and, for a stock report or an analysis, looks up the companies' news in a second
// round: news runs are 2 calls, stock reports 3, analyses 3 and the citation call, chat turns 1 or 2 (a chat turn
// searches only when it asks for news: figures come from market_data). The answer
// is the analyst's, written from everything the run retrieved. The prompts, tools, breakpoints and follow-up
// calls are the engine's own: this decides only what the model replies.
import { offlineAnalyst } from '@fin/ai';
import {
  briefText,
  lastUserText,
  toolUse,
  webSearch,
  type ContentScript,
  type MessagesRequestBody,
  type ReplyHandler,
  type RequestContentBlock,
  type RequestMessage,
} from '@fin/fakes';

const SEARCH_RESULTS = 5;

function blocksOf(message: RequestMessage): RequestContentBlock[] {
  return typeof message.content === 'string' ? [] : message.content;
}

function calledTools(body: MessagesRequestBody): Array<{ name: string; input: Record<string, unknown> }> {
  return body.messages
    .filter((message) => message.role === 'assistant')
    .flatMap(blocksOf)
    .filter((block) => block.type === 'tool_use')
    .map((block) => ({ name: String(block.name), input: (block.input ?? {}) as Record<string, unknown> }));
}

function searched(body: MessagesRequestBody): boolean {
  return body.messages.some((message) => blocksOf(message).some((block) => block.type === 'server_tool_use'));
}

/**
 * The request as the analyst needs it to answer from every tool result of the run: its turns up to the first
 * tool call, then one assistant turn with all the run's tool calls and one user turn with all their results (the
 * analyst reads the last turn's results only). The follow-up calls (citations, repair) are passed as they are.
 */
function analystView(body: MessagesRequestBody): MessagesRequestBody {
  const first = body.messages.findIndex(
    (message) => message.role === 'assistant' && blocksOf(message).some((block) => block.type === 'tool_use'),
  );
  const last = body.messages.at(-1);
  if (first === -1 || last === undefined || !blocksOf(last).some((block) => block.type === 'tool_result')) return body;
  const later = body.messages.slice(first);
  return {
    ...body,
    messages: [
      ...body.messages.slice(0, first),
      {
        role: 'assistant',
        content: later
          .filter((message) => message.role === 'assistant')
          .flatMap(blocksOf)
          .filter((block) => block.type === 'tool_use'),
      },
      {
        role: 'user',
        content: later
          .filter((message) => message.role === 'user')
          .flatMap(blocksOf)
          .filter((block) => block.type === 'tool_result'),
      },
    ],
  };
}

function symbolOf(input: unknown): string {
  const symbol = typeof input === 'object' && input !== null ? (input as { symbol?: unknown }).symbol : undefined;
  return typeof symbol === 'string' ? symbol : '';
}

function searchFor(query: string): ContentScript[] {
  const slug = query.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return webSearch(
    query,
    Array.from({ length: SEARCH_RESULTS }, (_, index) => ({
      url: `https://research.example.com/${slug}/${index + 1}`,
      title: `${query}: coverage ${index + 1}`,
      pageAge: '2026-11-20',
    })),
  );
}

export function researchingAnalyst(): ReplyHandler {
  const analyst = offlineAnalyst();
  return async (request, context) => {
    const body = request.body;
    const canUseTools = body.tool_choice !== undefined && body.tool_choice.type !== 'none';
    const chatting = briefText(body).includes('research assistant');
    // A chat turn searches the web when it asks for news; figures come from market_data.
    const wantsSearch = !chatting || /\b(news|latest|recent|today)\b/i.test(lastUserText(body));
    const offersSearch = canUseTools && wantsSearch && (body.tools ?? []).some((tool) => tool.name === 'web_search');
    const reply = await analyst({ body: analystView(body) }, context);
    const calls = reply.content.filter((block) => block.type === 'tool_use');
    // The first research round: the analyst's market_data calls, and one web search about the same companies.
    if (calls.length > 0) {
      const symbols = calls.map((call) => symbolOf(call.input)).join(' ');
      return offersSearch && !searched(body)
        ? { ...reply, content: [...searchFor(`${symbols} latest developments`), ...reply.content] }
        : reply;
    }
    // A stock report's or an analysis's second round: the companies' news, once the overviews are in. (News runs
    // ask for news first; a chat reply answers from what its one round found.)
    const called = calledTools(body);
    if (!chatting && canUseTools && called.length > 0 && !called.some((call) => call.input.kind === 'news')) {
      const symbols = [...new Set(called.map((call) => symbolOf(call.input)))];
      return { content: symbols.map((symbol) => toolUse('market_data', { symbol, kind: 'news' })) };
    }
    return reply;
  };
}
