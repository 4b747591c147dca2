// The chat service as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { chatConfigShape, checkChatConfig } from './config';
import { createChatUnit } from './service';

void runService({ name: 'chat', configShape: chatConfigShape, checkConfig: checkChatConfig, unit: createChatUnit });
