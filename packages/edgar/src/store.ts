// What the live client keeps in Postgres, shared by every replica (migration 1765238400000): EDGAR's JSON answers
// that change (gzipped, with when they were fetched) and the sections of filing documents, which never change
// once filed and are kept by accession number for good.
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { type Queryable } from '@fin/db';
import { z } from 'zod';
import { Filing, FilingSection } from './types';

const zip = promisify(gzip);
const unzip = promisify(gunzip);

export interface StoredResponse {
  body: unknown;
  fetchedAt: Date;
}

export interface StoredDocument {
  filing: Filing;
  sections: FilingSection[];
  sectionsVersion: number;
}

const Sections = z.array(FilingSection);

export class EdgarStore {
  constructor(private readonly pool: Queryable) {}

  async response(key: string): Promise<StoredResponse | null> {
    const { rows } = await this.pool.query<{ body: Buffer; fetched_at: Date }>(
      'SELECT body, fetched_at FROM edgar_responses WHERE key = $1',
      [key],
    );
    const row = rows[0];
    if (!row) return null;
    return { body: JSON.parse((await unzip(row.body)).toString('utf8')) as unknown, fetchedAt: row.fetched_at };
  }

  /** When the stored copy was fetched, without reading it. */
  async fetchedAt(key: string): Promise<Date | null> {
    const { rows } = await this.pool.query<{ fetched_at: Date }>('SELECT fetched_at FROM edgar_responses WHERE key = $1', [key]);
    return rows[0]?.fetched_at ?? null;
  }

  /** Keeps EDGAR's answer as it came (its text), so that a later read parses what EDGAR said, not what we made of it. */
  async saveResponse(key: string, text: string, fetchedAt: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO edgar_responses (key, body, fetched_at) VALUES ($1, $2, $3)
       ON CONFLICT (key) DO UPDATE SET body = excluded.body, fetched_at = excluded.fetched_at
        WHERE edgar_responses.fetched_at <= excluded.fetched_at`,
      [key, await zip(text), fetchedAt],
    );
  }

  async document(accession: string): Promise<StoredDocument | null> {
    const { rows } = await this.pool.query<{ filing: unknown; sections: unknown; sections_version: number }>(
      'SELECT filing, sections, sections_version FROM edgar_documents WHERE accession = $1',
      [accession],
    );
    const row = rows[0];
    return row ? { filing: Filing.parse(row.filing), sections: Sections.parse(row.sections), sectionsVersion: row.sections_version } : null;
  }

  async saveDocument(filing: Filing, sections: FilingSection[], sectionsVersion: number, fetchedAt: Date): Promise<void> {
    await this.pool.query(
      `INSERT INTO edgar_documents (accession, cik, filing, sections, sections_version, fetched_at)
       VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT (accession) DO UPDATE
         SET filing = excluded.filing, sections = excluded.sections, sections_version = excluded.sections_version,
             fetched_at = excluded.fetched_at`,
      [filing.accession, filing.cik, JSON.stringify(filing), JSON.stringify(sections), sectionsVersion, fetchedAt],
    );
  }
}
