import { JobPathParams, JobResultByType, JobResultResponse, JobResultResponseByType, JobStatusResponse, JobType } from '../src';
import { UUID, ok, rejected } from './helpers';

describe('JobPathParams', () => {
  it('accepts every job type with a UUID', () => {
    for (const job_type of JobType.options) expect(ok(JobPathParams, { job_type, job_id: UUID })).toEqual({ job_type, job_id: UUID });
  });

  it('names a malformed UUID and an unknown job type', () => {
    expect(rejected(JobPathParams, { job_type: 'chat', job_id: 'not-a-uuid' })).toBe(
      'job_type: must be one of news, stock-report, analysis, got "chat"; job_id: must be a UUID such as 3fa85f64-5717-4562-b3fc-2c963f66afa6, got "not-a-uuid"',
    );
  });
});

describe('JobStatusResponse', () => {
  const base = { job_id: UUID, status: 'running', progress: 75, currently_working_on: 'Ranking news' };

  it('accepts progress 0 and 100, rejects -1, 101 and fractions', () => {
    ok(JobStatusResponse, { ...base, progress: 0 });
    ok(JobStatusResponse, { ...base, progress: 100 });
    rejected(JobStatusResponse, { ...base, progress: -1 });
    rejected(JobStatusResponse, { ...base, progress: 101 });
    rejected(JobStatusResponse, { ...base, progress: 50.5 });
  });

  it('accepts the four statuses only', () => {
    for (const status of ['pending', 'running']) ok(JobStatusResponse, { ...base, status });
    ok(JobStatusResponse, { ...base, status: 'completed', result_url: `/api/jobs/news/${UUID}/result` });
    ok(JobStatusResponse, { ...base, status: 'failed', error: { type: 'gateway_timeout', detail: 'The model timed out.' } });
    rejected(JobStatusResponse, { ...base, status: 'done' });
  });

  it('names the result in a completed status (result_url), and only there', () => {
    expect(rejected(JobStatusResponse, { ...base, status: 'completed' })).toMatch(/^result_url: /);
    rejected(JobStatusResponse, { ...base, status: 'completed', result_url: 'https://elsewhere.example/result' });
    expect(JobStatusResponse.parse({ ...base, status: 'running', result_url: `/api/jobs/news/${UUID}/result` })).not.toHaveProperty(
      'result_url',
    );
  });

  it('carries error exactly when failed', () => {
    expect(rejected(JobStatusResponse, { ...base, status: 'failed' })).toMatch(/^error: /);
    expect(rejected(JobStatusResponse, { ...base, error: { type: 'internal_error', detail: 'x' } })).toBe(
      'error: is only present when status is failed',
    );
    rejected(JobStatusResponse, { ...base, status: 'failed', error: { type: 'oops', detail: 'x' } });
  });

  it('carries queue_position (a count, 0 or more) only while pending', () => {
    ok(JobStatusResponse, { ...base, status: 'pending', queue_position: 0 });
    ok(JobStatusResponse, { ...base, status: 'pending', queue_position: 120 });
    ok(JobStatusResponse, { ...base, status: 'pending' });
    rejected(JobStatusResponse, { ...base, status: 'pending', queue_position: -1 });
    rejected(JobStatusResponse, { ...base, status: 'pending', queue_position: 1.5 });
    expect(rejected(JobStatusResponse, { ...base, queue_position: 3 })).toBe('queue_position: is only present when status is pending');
  });
});

describe('job results', () => {
  const results = {
    news: { news: [] },
    'stock-report': {
      detailed_analysis: [{ title: 't', keyMetric: 'k', implications: [], investmentThesis: 'i', category: 'risk', citations: [] }],
      quick_insights: ['a', 'b'],
      quick_insight_citations: [[], []],
      figures: [],
      ratios: [],
      figure_notes: [],
    },
    analysis: { format: 'markdown', content: '# ok', citations: [] },
  } as const;

  it('maps every job type to its result schema', () => {
    expect(Object.keys(JobResultByType).sort()).toEqual([...JobType.options].sort());
    for (const type of JobType.options) ok(JobResultByType[type], results[type]);
    rejected(JobResultByType.news, results.analysis);
    rejected(JobResultByType.analysis, results.news);
  });

  it('accepts any object as the generic result, but only an object', () => {
    for (const type of JobType.options) ok(JobResultResponse, { job_id: UUID, status: 'completed', result: results[type] });
    rejected(JobResultResponse, { job_id: UUID, status: 'completed', result: 'text' });
    rejected(JobResultResponse, { job_id: UUID, status: 'running', result: {} });
  });

  it('types the full response per job type', () => {
    for (const type of JobType.options) {
      const response = { job_id: UUID, status: 'completed', result: results[type] };
      expect(ok(JobResultResponseByType[type], response)).toEqual(response);
    }
    rejected(JobResultResponseByType['stock-report'], { job_id: UUID, status: 'completed', result: results.news });
  });
});
