import type { AiEngine } from '@fin/ai';
import { StockReportRequest } from '@fin/contracts';
import { createProductWorker, type JobWorker, type ProductWorkerDeps } from '@fin/job-kit';

/** The stock-report worker role: one symbol is a single-stock analysis, two are a comparison of the two. */
export function createStockReportWorker({ engine, ...deps }: ProductWorkerDeps<AiEngine>): JobWorker {
  return createProductWorker({
    ...deps,
    jobType: 'stock-report',
    run: (request, ctx) => engine.stockReport(StockReportRequest.parse(request), ctx),
  });
}
