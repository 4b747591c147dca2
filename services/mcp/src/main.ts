// The MCP service as a process: runService parses the config, starts the metrics listener and the service, and shuts
// down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { mcpService } from './service';

void runService(mcpService);
