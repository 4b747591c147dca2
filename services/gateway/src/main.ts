// The gateway as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { gatewayConfigShape } from './config';
import { startGateway } from './service';

void runService({ name: 'gateway', configShape: gatewayConfigShape, start: startGateway });
