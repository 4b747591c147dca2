// EDGAR's environment (docs/configuration.md), spread into the config shape of every process that reads filings.
import { bool, ConfigError, crossChecked, url } from '@fin/config';
import { z } from 'zod';

/**
 * SEC EDGAR answers only requests whose User-Agent declares who sends them: a company or person and a contact
 * email ("Sample Company Name AdminContact@<sample company domain>.com",
 * https://www.sec.gov/search-filings/edgar-search-assistance/accessing-edgar-data).
 */
const CONTACT = /^(?=.*\S+@\S+\.\S+)(?=.*[A-Za-z]{2,}\s+\S+@).{8,200}$/;
const EXAMPLE = 'EDGAR_USER_AGENT="Example Research Ltd ops@example.com"';

const USER_AGENT_MISSING = `is required while filings come from SEC EDGAR (online): EDGAR refuses requests without a User-Agent naming the operator and a contact email, e.g. ${EXAMPLE}; or set EDGAR_OFFLINE=true for the bundled sample`;

/** Online unless EDGAR_OFFLINE says otherwise; unset, EDGAR follows the AI engine (online with a real Anthropic key). */
export function edgarOnline(config: Readonly<Record<string, unknown>>): boolean {
  if (typeof config.EDGAR_OFFLINE === 'boolean') return !config.EDGAR_OFFLINE;
  return config.AI_OFFLINE !== true && typeof config.ANTHROPIC_API_KEY === 'string' && config.ANTHROPIC_API_KEY !== '';
}

export const edgarConfigShape = {
  /** Who operates this deployment, with a contact email, sent on every request to EDGAR. Required online. */
  EDGAR_USER_AGENT: crossChecked(
    z.string().trim().regex(CONTACT, `must name the operator and a contact email, e.g. ${EXAMPLE}`).optional(),
    (config) =>
      edgarOnline(config) && config.EDGAR_USER_AGENT === undefined ? [{ variable: 'EDGAR_USER_AGENT', message: USER_AGENT_MISSING }] : [],
  ),
  /** www.sec.gov: the ticker map and the filing archive (tests point it at the fake). */
  EDGAR_BASE_URL: url(['http', 'https']).default('https://www.sec.gov'),
  /** data.sec.gov: submissions and XBRL company facts. */
  EDGAR_DATA_URL: url(['http', 'https']).default('https://data.sec.gov'),
  /** true: the bundled sample; false: EDGAR; unset: as the AI engine (offline without an Anthropic key). */
  EDGAR_OFFLINE: bool().optional(),
};

/** The start-up error for online mode without a User-Agent, naming the variable. */
export function missingUserAgent(): ConfigError {
  return new ConfigError([{ variable: 'EDGAR_USER_AGENT', message: USER_AGENT_MISSING }]);
}
