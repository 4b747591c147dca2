// Signatures checked by a verifier written from the Standard Webhooks specification (test/support), not by the
// code that signs; and the retry schedule.
import { DEFAULT_RETRY_SCHEDULE, newSigningSecret, retryDelayMs, signedHeaders } from '../src';
import { standardWebhooksProblem } from './support';

describe('Standard Webhooks signing', () => {
  const body = JSON.stringify({ type: 'job.completed', data: { job_id: '3fa85f64-5717-4562-b3fc-2c963f66afa6' } });

  it('makes whsec_ secrets of 32 random bytes', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newSigningSecret()).not.toBe(secret);
  });

  it('signs what an independent verifier accepts, and nothing else', () => {
    const secret = newSigningSecret();
    const now = Math.floor(Date.now() / 1000);
    const headers = signedHeaders([secret], 'msg_1', now, body);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(standardWebhooksProblem(secret, headers, body)).toBeNull();
    expect(standardWebhooksProblem(secret, headers, `${body} `)).toBe('no signature matches');
    expect(standardWebhooksProblem(secret, { ...headers, 'webhook-id': 'msg_2' }, body)).toBe('no signature matches');
    expect(standardWebhooksProblem(newSigningSecret(), headers, body)).toBe('no signature matches');
    const old = signedHeaders([secret], 'msg_1', now - 3600, body);
    expect(standardWebhooksProblem(secret, old, body)).toBe('timestamp out of tolerance');
  });

  it('signs with every secret during a rotation, so either verifies', () => {
    const current = newSigningSecret();
    const previous = newSigningSecret();
    const headers = signedHeaders([current, previous], 'msg_1', Math.floor(Date.now() / 1000), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(standardWebhooksProblem(current, headers, body)).toBeNull();
    expect(standardWebhooksProblem(previous, headers, body)).toBeNull();
  });
});

describe('the retry schedule', () => {
  it('doubles from 5 s up to 2 h', () => {
    const plain = [1, 2, 3, 4, 5, 10, 11, 12, 20].map((failed) => retryDelayMs(failed, DEFAULT_RETRY_SCHEDULE, 0.5));
    expect(plain).toEqual([5_000, 10_000, 20_000, 40_000, 80_000, 2_560_000, 5_120_000, 7_200_000, 7_200_000]);
  });

  it('jitters by at most 20 % either way', () => {
    expect(retryDelayMs(3, DEFAULT_RETRY_SCHEDULE, 0)).toBe(16_000);
    expect(retryDelayMs(3, DEFAULT_RETRY_SCHEDULE, 0.999_999)).toBe(24_000);
  });

  it('makes some 20 attempts within 24 h', () => {
    let elapsed = 0;
    let attempts = 1;
    while (elapsed + retryDelayMs(attempts, DEFAULT_RETRY_SCHEDULE, 0.5) <= 24 * 3600_000) {
      elapsed += retryDelayMs(attempts, DEFAULT_RETRY_SCHEDULE, 0.5);
      attempts += 1;
    }
    expect(attempts).toBeGreaterThanOrEqual(18);
    expect(attempts).toBeLessThanOrEqual(24);
  });
});
