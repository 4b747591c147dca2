// Who a portal page is answering: the signed-in session, its account and the page's CSRF token. Its own file, so
// that the pages (routes.ts) and the webhooks pages they mount share it without importing each other.
import type { Account } from '../accounts';
import type { Session } from '../session';

export interface Signed {
  session: Session;
  account: Account;
  csrf: string;
}
