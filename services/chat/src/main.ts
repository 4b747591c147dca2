// The chat service as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { chatConfigShape } from './config';
import { startChatService } from './service';

void runService({
  name: 'chat',
  configShape: chatConfigShape,
  checkConfig: (config, logger) => {
    if (config.CHAT_DB_POOL_SIZE !== undefined) {
      logger.warn(
        { CHAT_DB_POOL_SIZE: config.CHAT_DB_POOL_SIZE, DATABASE_POOL_MAX: config.DATABASE_POOL_MAX },
        'CHAT_DB_POOL_SIZE is deprecated and sets the pool size in place of DATABASE_POOL_MAX; set DATABASE_POOL_MAX instead',
      );
    }
  },
  start: startChatService,
});
