// The portal as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { portalConfigShape } from './config';
import { createPortalUnit } from './service';

void runService({ name: 'portal', configShape: portalConfigShape, unit: createPortalUnit });
