-- Up Migration
-- A job reaching a final state notifies `job_finished` with its id, so a process waiting for a job (the analysis
-- API answers a request inline when its job completes within ANALYSIS_INLINE_WAIT_MS) wakes when it happens
-- instead of polling. A trigger, so every writer notifies (the jobs service applying an event, its reaper); the
-- notification is delivered only when the change commits.
CREATE FUNCTION job_finished_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('job_finished', NEW.id::text);
  RETURN NULL;
END;
$$;
CREATE TRIGGER jobs_finished
  AFTER UPDATE OF status ON jobs
  FOR EACH ROW
  WHEN (NEW.status IN ('completed', 'failed') AND OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION job_finished_notify();

-- Down Migration
DROP TRIGGER jobs_finished ON jobs;
DROP FUNCTION job_finished_notify();
