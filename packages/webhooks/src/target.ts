// What can be checked about a delivery URL before anything is sent. The real check is at call time, in the
// executor's connect hook (every resolved address must be public); here an IP literal or a localhost name that
// can never pass it is refused at once, so a customer learns of the mistake when registering, not a day later.
import { bareAddress, isAllowedAddress, isLoopbackHost, type AddressPolicy } from '@fin/customer-tools';
import { isIP } from 'node:net';

/** Why `url` can never receive a delivery, or null when it may (its host is checked again on every attempt). */
export function unreachableTargetReason(url: string, policy: AddressPolicy = {}): string | null {
  let host: string;
  let protocol: string;
  try {
    const parsed = new URL(url);
    host = bareAddress(parsed.hostname);
    protocol = parsed.protocol;
  } catch {
    return 'must be an absolute https:// URL';
  }
  if (protocol === 'http:') {
    if (!(policy.allowLocalHttp === true && isLoopbackHost(host)))
      return 'must be an https:// URL (http:// is accepted only for a receiver on this machine, in development with WEBHOOK_ALLOW_LOCAL_HTTP=true)';
  } else if (protocol !== 'https:') {
    return 'must be an absolute https:// URL';
  }
  if (isIP(host) !== 0) {
    return isAllowedAddress(host, policy) ? null : `${host} is not a public internet address; deliveries go to public addresses only`;
  }
  const name = host.toLowerCase().replace(/\.$/, '');
  if ((name === 'localhost' || name.endsWith('.localhost')) && !policy.allowLoopback)
    return `${name} is not a public internet address; deliveries go to public addresses only`;
  return null;
}
