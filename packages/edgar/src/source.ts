// Which FilingsSource a process uses: EDGAR itself online, the bundled sample offline (edgarOnline in config.ts
// decides from the environment). Online needs an operator's User-Agent and the shared database.
import { type Queryable } from '@fin/db';
import { type Logger } from '@fin/log';
import { EdgarClient } from './client';
import { missingUserAgent } from './config';
import { type FairAccessOptions } from './fair-access';
import { sampleFilingsSource } from './sample';
import { type FilingsSource } from './types';

export interface FilingsSourceOptions {
  /** EDGAR itself (true) or the bundled sample (false). */
  online: boolean;
  /** EDGAR_USER_AGENT: required online. */
  userAgent?: string | undefined;
  /** EDGAR_BASE_URL (www.sec.gov) and EDGAR_DATA_URL (data.sec.gov). */
  baseUrl?: string | undefined;
  dataUrl?: string | undefined;
  /** Required online: fair access and the caches are shared through it. */
  pool?: Queryable | undefined;
  clock?: () => Date;
  logger?: Logger | undefined;
  fairAccess?: FairAccessOptions;
}

/**
 * The filings source for this process. Online without a User-Agent it throws the ConfigError that names
 * EDGAR_USER_AGENT (with an example), so the process refuses to start rather than being refused by EDGAR later.
 */
export function filingsSource(options: FilingsSourceOptions): FilingsSource {
  if (!options.online) return sampleFilingsSource();
  if (!options.userAgent) throw missingUserAgent();
  if (!options.pool)
    throw new TypeError('filingsSource: online mode needs the database pool (fair access and caches are shared through it)');
  return new EdgarClient({
    userAgent: options.userAgent,
    pool: options.pool,
    ...(options.baseUrl ? { baseUrl: options.baseUrl } : {}),
    ...(options.dataUrl ? { dataUrl: options.dataUrl } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.fairAccess ? { fairAccess: options.fairAccess } : {}),
  });
}
