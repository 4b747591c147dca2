#!/usr/bin/env node
/**
 * `npm run check:model`: the pre-flight an operator runs with a new API key or model before going live
 * (docs/operations.md#checking-a-key-or-a-model). Reads the AI variables from the environment as the services do.
 * Exit status: 0 every request passed, 1 otherwise.
 */
import { checkModel } from './check-model';

checkModel(process.env, (line) => process.stdout.write(`${line}\n`)).then(
  (status) => {
    process.exitCode = status;
  },
  (error: unknown) => {
    process.stderr.write(`check:model failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
