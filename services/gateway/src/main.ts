// The gateway as a process: runService parses the config, starts the metrics listener and the gateway (in front of
// the services over HTTP, at the URLs of its config), and shuts down in the fixed order on SIGTERM/SIGINT. See
// docs/architecture.md.
import { runService } from '@fin/http';
import { gatewayService } from './service';

void runService(gatewayService());
