// The job-status service as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its unit, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { jobsService } from './service';

void runService(jobsService);
