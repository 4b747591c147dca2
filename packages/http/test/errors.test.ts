import { ErrorBody } from '@fin/contracts';
import { AppError, badRequest, toAppError, tooManyRequests } from '../src';

describe('AppError', () => {
  it('produces the spec error body with the default status of its type', () => {
    const body = badRequest('n: must be at most 20').toBody();
    expect(body).toEqual({ detail: 'n: must be at most 20', status_code: 400, type: 'validation_error' });
    expect(ErrorBody.parse(body)).toEqual(body);
  });

  it('accepts a status other than the default where the type allows it', () => {
    expect(new AppError('service_unavailable', 'news is down', { status: 503 }).toBody().status_code).toBe(503);
  });

  it('carries Retry-After on a 429, rounded up to whole seconds', () => {
    const error = tooManyRequests('Rate limit exceeded', 12.2, { 'X-RateLimit-Limit': '100' });
    expect(error.status).toBe(429);
    expect(error.headers).toEqual({ 'X-RateLimit-Limit': '100', 'Retry-After': '13' });
  });

  it('hides the message of an unknown error behind a generic 500', () => {
    const internal = new Error('connection to 10.0.0.5:5432 refused, password=hunter2');
    const error = toAppError(internal);
    expect(error.toBody()).toEqual({ detail: 'An internal error occurred.', status_code: 500, type: 'internal_error' });
    expect(error.cause).toBe(internal);
  });
});
