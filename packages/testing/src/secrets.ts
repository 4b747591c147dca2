import { randomBytes } from 'node:crypto';

/**
 * A customer-tools encryption key (`<key id>:<base64 of 32 bytes>`) for a test's services: every process that
 * stores or calls customer tools requires one. Fresh per call; give all services of one test the same value.
 */
export function testCustomerToolsKey(): string {
  return `test-1:${randomBytes(32).toString('base64')}`;
}
