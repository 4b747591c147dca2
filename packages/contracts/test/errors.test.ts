import { z } from 'zod';
import { ERROR_DETAIL_MAX, ERROR_STATUS, ErrorBody, ErrorType, NewsRequest, ToolHeaders, formatZodError } from '../src';
import { ok, rejected } from './helpers';

describe('ErrorType and ERROR_STATUS', () => {
  it('maps each closed type to its default status', () => {
    expect(ERROR_STATUS).toEqual({
      validation_error: 400,
      unauthorized: 401,
      forbidden: 403,
      not_found: 404,
      method_not_allowed: 405,
      conflict: 409,
      payload_too_large: 413,
      unsupported_media_type: 415,
      unprocessable_entity: 422,
      rate_limit_exceeded: 429,
      model_refused: 422,
      internal_error: 500,
      bad_gateway: 502,
      model_request_rejected: 502,
      service_unavailable: 503,
      gateway_timeout: 504,
    });
    expect(ErrorType.options).toEqual(Object.keys(ERROR_STATUS));
  });
});

describe('ErrorBody', () => {
  it('accepts the spec shape and rejects open types and non-error statuses', () => {
    const body = { detail: 'n: must be at most 20', status_code: 400, type: 'validation_error' };
    expect(ok(ErrorBody, body)).toEqual(body);
    rejected(ErrorBody, { ...body, type: 'bad_request' });
    rejected(ErrorBody, { ...body, status_code: 200 });
    rejected(ErrorBody, { ...body, status_code: 400.5 });
    rejected(ErrorBody, { status_code: 400, type: 'validation_error' });
  });
});

function errorOf(schema: z.ZodType, value: unknown): z.ZodError {
  const result = schema.safeParse(value);
  if (result.success) throw new Error('expected a validation failure');
  return result.error;
}

describe('formatZodError', () => {
  it('names each field and why, joined in one line', () => {
    const symbols = Array.from({ length: 12 }, (_, index) => `S${index}`);
    expect(formatZodError(errorOf(NewsRequest, { symbols, n: 21 }))).toBe(
      'symbols: expected 1 to 10 distinct symbols, got 12; n: must be at most 20',
    );
  });

  it('writes array indexes and odd keys the way a reader would look them up', () => {
    const schema = z.object({ list: z.array(z.object({ x: z.number() })), map: z.record(z.string(), z.number()) });
    expect(formatZodError(errorOf(schema, { list: [{ x: 1 }, { x: 'a' }], map: { 'X-Key': 'v' } }))).toBe(
      'list[1].x: Invalid input: expected number, received string; map["X-Key"]: Invalid input: expected number, received string',
    );
  });

  it('says "is required" for a missing field', () => {
    expect(formatZodError(errorOf(z.object({ prompt: z.string() }), {}))).toBe('prompt: is required');
  });

  it('unwraps invalid record keys into the key schema message', () => {
    expect(formatZodError(errorOf(ToolHeaders, { 'Bad Name': 'x' }))).toBe(
      '["Bad Name"]: invalid name: must be 1 to 128 HTTP token characters (letters, digits and !#$%&\'*+-.^_`|~)',
    );
  });

  it('stays within the length cap and says how many problems were left out', () => {
    const schema = z.object(Object.fromEntries(Array.from({ length: 40 }, (_, index) => [`field_number_${index}`, z.string()])));
    const detail = formatZodError(errorOf(schema, {}));
    expect(detail.length).toBeLessThanOrEqual(ERROR_DETAIL_MAX);
    expect(detail).toMatch(/^field_number_0: is required; field_number_1: is required; .*; \(and \d+ more\)$/);
    const shown = detail.split('; ').filter((part) => part.endsWith('is required')).length;
    expect(detail).toContain(`(and ${40 - shown} more)`);
  });

  it('cuts a single overlong message', () => {
    const schema = z.string().refine(() => false, 'x'.repeat(2000));
    const detail = formatZodError(errorOf(schema, 'a'));
    expect(detail).toHaveLength(ERROR_DETAIL_MAX);
    expect(detail.endsWith('…')).toBe(true);
  });
});
