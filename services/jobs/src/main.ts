// The job-status service as a process: runService parses the config, starts the metrics listener and the service (its
// clients, its app, listening), and shuts down in the fixed order on SIGTERM/SIGINT. See docs/architecture.md.
import { runService } from '@fin/http';
import { jobsConfigShape } from './config';
import { createJobsUnit } from './service';

void runService({ name: 'jobs', configShape: jobsConfigShape, unit: createJobsUnit });
