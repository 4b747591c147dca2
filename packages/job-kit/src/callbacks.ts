// callback_url of a product request: checked before the job is submitted (a URL that can never receive a
// delivery, or an account without a callback secret, is a 400 and no job is made), and left on the job the
// answer names once it is known. A cache hit (200 from the cache) has no job run and leaves nothing.
import type { AddressPolicy } from '@fin/customer-tools';
import type { Queryable } from '@fin/db';
import { badRequest } from '@fin/http';
import { hasCallbackSecret, registerCallback, unreachableTargetReason } from '@fin/webhooks';

export async function checkCallbackUrl(
  db: Queryable,
  tenantId: string,
  url: string | undefined,
  policy: AddressPolicy = {},
): Promise<void> {
  if (url === undefined) return;
  const unreachable = unreachableTargetReason(url, policy);
  if (unreachable !== null) throw badRequest(`callback_url: ${unreachable}`);
  if (!(await hasCallbackSecret(db, tenantId)))
    throw badRequest(
      'callback_url: this account has no callback secret yet; create it with POST /api/webhooks/callback-secret (callbacks are signed with it)',
    );
}

export async function leaveCallback(db: Queryable, tenantId: string, jobId: string, url: string | undefined): Promise<void> {
  if (url !== undefined) await registerCallback(db, { tenantId, jobId, url });
}
