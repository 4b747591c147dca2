// What the status and result endpoints read. Each is one primary-key read of only the columns it needs, as a
// prepared statement: the status endpoint is polled by every client of every job.
import type { JobStatus, JobType } from '@fin/contracts';
import type { Queryable } from '@fin/db';

/** The job a caller asks about: the tenant it authenticated as and the two path parameters. */
export interface JobRef {
  tenantId: string;
  jobType: JobType;
  jobId: string;
}

export interface JobStatusRow {
  status: JobStatus;
  progress: number;
  currently_working_on: string | null;
  error: unknown;
}

export interface JobResultRow extends JobStatusRow {
  result: Record<string, unknown> | null;
}

// Tenant and type are part of the lookup, so a mismatch is simply no row. tenant_id is compared as text: the
// identity's tenant is any token the gateway signed, and a non-UUID must not turn into a database error.
const WHERE = 'WHERE id = $1 AND tenant_id::text = $2 AND type = $3';
const STATUS_SQL = `SELECT status, progress, currently_working_on, error FROM jobs ${WHERE}`;
const RESULT_SQL = `SELECT status, progress, currently_working_on, error, result FROM jobs ${WHERE}`;

async function read<R>(db: Queryable, name: string, text: string, { tenantId, jobType, jobId }: JobRef): Promise<R | undefined> {
  const { rows } = await db.query<R & Record<string, unknown>>({ name, text, values: [jobId, tenantId.toLowerCase(), jobType] });
  return rows[0];
}

/** The job's status fields, or undefined when the caller has no such job. */
export function readJobStatus(db: Queryable, ref: JobRef): Promise<JobStatusRow | undefined> {
  return read<JobStatusRow>(db, 'job-store-status', STATUS_SQL, ref);
}

/** The job's status fields and result, or undefined when the caller has no such job. */
export function readJobResult(db: Queryable, ref: JobRef): Promise<JobResultRow | undefined> {
  return read<JobResultRow>(db, 'job-store-result', RESULT_SQL, ref);
}

/** What a job's event stream reads: the status fields, the number of the last event, and the result once completed. */
export interface JobStreamRow extends JobResultRow {
  id: string;
  event_seq: number;
}

const STREAM_COLUMNS =
  "id::text AS id, status, progress, currently_working_on, error, event_seq, CASE WHEN status = 'completed' THEN result END AS result";
const STREAM_SQL = `SELECT ${STREAM_COLUMNS} FROM jobs ${WHERE}`;

/** The job's state as its event stream shows it, or undefined when the caller has no such job. */
export function readJobStreamState(db: Queryable, ref: JobRef): Promise<JobStreamRow | undefined> {
  return read<JobStreamRow>(db, 'job-store-stream', STREAM_SQL, ref);
}

/**
 * The states of jobs whose streams are open, in one read (their tenants were checked when each stream opened).
 * Missing ids (a job deleted meanwhile) are left out.
 */
export async function readJobStreamStates(db: Queryable, jobIds: readonly string[]): Promise<JobStreamRow[]> {
  if (jobIds.length === 0) return [];
  const { rows } = await db.query<JobStreamRow>({
    name: 'job-store-streams',
    text: `SELECT ${STREAM_COLUMNS} FROM jobs WHERE id = ANY($1::uuid[])`,
    values: [jobIds],
  });
  return rows;
}

/** How many jobs of a type are in one unfinished state. */
export interface UnfinishedCount {
  type: string;
  status: 'pending' | 'running';
  count: number;
}

/**
 * Unfinished jobs by type and status, for the metrics (fin_jobs_in_flight). Reads the partial index of unfinished
 * jobs (jobs_unfinished_lease_idx), so its cost follows the jobs in flight, not the table.
 */
export async function countUnfinishedJobs(db: Queryable): Promise<UnfinishedCount[]> {
  const { rows } = await db.query<UnfinishedCount>({
    name: 'jobs-unfinished-count',
    text: `SELECT type, status, count(*)::int AS count FROM jobs WHERE status IN ('pending', 'running') GROUP BY type, status`,
  });
  return rows;
}
