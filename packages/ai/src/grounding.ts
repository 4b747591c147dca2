/**
 * Grounding: a result may cite only URLs that tools or web search actually returned during its run.
 * URLs are compared in a normal form (lower-case scheme and host, no fragment, no trailing slash), and only
 * http(s) URLs count.
 */
export function normaliseUrl(raw: string): string | undefined {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  url.hash = '';
  const text = url.toString();
  return text.endsWith('/') && url.pathname !== '/' ? text.slice(0, -1) : text.replace(/\/$/, '');
}

export class GroundingSet {
  private readonly allowed = new Map<string, string>();

  constructor(urls: Iterable<string> = []) {
    for (const url of urls) this.add(url);
  }

  add(raw: string): void {
    const normal = normaliseUrl(raw);
    if (normal && !this.allowed.has(normal)) this.allowed.set(normal, raw.trim());
  }

  /** The URLs from `candidates` that were returned during the run (in their returned spelling), de-duplicated, in order. */
  filter(candidates: readonly string[]): { kept: string[]; dropped: string[] } {
    const kept: string[] = [];
    const dropped: string[] = [];
    const seen = new Set<string>();
    for (const candidate of candidates) {
      const normal = normaliseUrl(candidate);
      const original = normal ? this.allowed.get(normal) : undefined;
      if (!normal || original === undefined) dropped.push(candidate);
      else if (!seen.has(normal)) {
        seen.add(normal);
        kept.push(original);
      }
    }
    return { kept, dropped };
  }

  get size(): number {
    return this.allowed.size;
  }
}

/** Relevance scores are on a 0–1 scale whatever the model says; NaN becomes 0. */
export function clampScore(score: number): number {
  if (!Number.isFinite(score)) return 0;
  return Math.min(1, Math.max(0, Math.round(score * 1000) / 1000));
}
