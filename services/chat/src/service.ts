import { createAiEngine, modelBudgetFromConfig, type AiEngine } from '@fin/ai';
import { createCustomerToolsFromConfig } from '@fin/customer-tools';
import { prismaFor, servicePool, type Pool } from '@fin/db';
import { createLifecycle, createResources, type Closer, type ServiceDefinition, type ServiceUnit } from '@fin/http';
import type { Logger } from '@fin/log';
import { createChatHandlers } from './app';
import { createChat } from './chat';
import { chatConfigShape, checkChatConfig, type ChatConfig } from './config';
import { createConversationStore } from './store';

/** Replies in progress stop this long before the drain deadline, so their last event goes out before connections are cut. */
const REPLY_DRAIN_MARGIN_MS = 2_000;

/** What the chat service runs on: each shared by the process (runSystem, tests) or made from its config. */
interface ChatShared {
  pool: Pool;
  engine: Pick<AiEngine, 'chat' | 'close'>;
}

interface ChatServiceOptions extends Partial<ChatShared> {
  config: ChatConfig;
  logger: Logger;
}

/**
 * The chat service as a unit: pool, AI engine, conversation store, the chat itself and its handlers.
 * Shutdown (SIGTERM) begins with the lifecycle: new turns are refused, replies in progress get the drain
 * timeout less a margin to finish, then every open stream gets a last `error` event and ends.
 */
async function createChatUnit({ config, logger, ...shared }: ChatServiceOptions): Promise<ServiceUnit> {
  // What the process does not share is made here, and closed after the replies have stopped.
  const resources = createResources();
  const pool = await resources.ownOrShared(
    'database pool',
    shared.pool,
    () => servicePool(config, { applicationName: 'chat', logger, max: config.CHAT_DB_POOL_SIZE ?? config.DATABASE_POOL_MAX }),
    (made) => made.end(),
  );
  const engine = await resources.ownOrShared(
    'AI engine',
    shared.engine,
    () =>
      createAiEngine({
        config,
        logger,
        customerTools: createCustomerToolsFromConfig(config, { pool, logger }),
        budget: modelBudgetFromConfig(config, { pool, logger }),
      }),
    (made) => made.close(),
  );
  const chat = createChat({
    store: createConversationStore(prismaFor(pool)),
    engine,
    logger,
    contextPairs: config.CHAT_CONTEXT_PAIRS,
    trimPairs: config.CHAT_CONTEXT_TRIM_PAIRS,
    detachGraceMs: config.CHAT_DETACH_GRACE_MS,
  });
  const replyDrainMs = Math.max(0, config.SHUTDOWN_DRAIN_TIMEOUT_MS - REPLY_DRAIN_MARGIN_MS);
  // Streams do not end on their own in time: the chat ends them while the server drains.
  const lifecycle = createLifecycle(() => void chat.shutdown(replyDrainMs));

  const closers: Closer[] = [{ name: 'chat replies', close: () => chat.shutdown(replyDrainMs) }, ...resources.closers()];

  return {
    name: 'chat',
    handlers: createChatHandlers({ chat, lifecycle, heartbeatMs: config.CHAT_HEARTBEAT_MS }),
    readiness: async () => {
      await pool.query('SELECT 1');
    },
    lifecycle,
    start: async () => {},
    closers,
  };
}

/** The chat service: runService runs it as a process, runSystem beside the others. */
export const chatService: ServiceDefinition<typeof chatConfigShape, ChatShared> = {
  name: 'chat',
  configShape: chatConfigShape,
  checkConfig: checkChatConfig,
  unit: createChatUnit,
};
