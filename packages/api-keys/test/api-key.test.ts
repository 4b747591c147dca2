import { createHash } from 'node:crypto';
import { API_KEY_LENGTH, API_KEY_PREFIX, displayPrefixOf, generateApiKey, hashApiKey, isWellFormedApiKey } from '../src';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('API key format', () => {
  it('generates prefixed 46-character base62 keys that validate', () => {
    for (let index = 0; index < 200; index++) {
      const { key } = generateApiKey();
      expect(key).toMatch(/^fin_[0-9A-Za-z]{42}$/);
      expect(key).toHaveLength(API_KEY_LENGTH);
      expect(isWellFormedApiKey(key)).toBe(true);
    }
  });

  it('draws the body from the full alphabet without repeats (≥ 160 bits of entropy)', () => {
    const keys = Array.from({ length: 2_000 }, () => generateApiKey().key);
    expect(new Set(keys).size).toBe(keys.length);
    // 36 random base62 characters = 214 bits, and no character of the alphabet is left out by the mapping
    // from random bytes.
    const seen = new Set(keys.flatMap((key) => key.slice(API_KEY_PREFIX.length, -6).split('')));
    expect([...seen].sort().join('')).toBe(BASE62.split('').sort().join(''));
    expect(36 * Math.log2(62)).toBeGreaterThanOrEqual(160);
    // The characters shown in listings leave well over 160 secret bits.
    expect((36 - 6) * Math.log2(62)).toBeGreaterThanOrEqual(160);
  });

  it('rejects every single-character change, at every position', () => {
    const { key } = generateApiKey();
    let variants = 0;
    for (let position = API_KEY_PREFIX.length; position < key.length; position++) {
      for (const replacement of BASE62) {
        if (replacement === key[position]) continue;
        const mistyped = key.slice(0, position) + replacement + key.slice(position + 1);
        expect(isWellFormedApiKey(mistyped)).toBe(false);
        variants++;
      }
    }
    expect(variants).toBe(42 * 61);
  });

  it('rejects swapped neighbours (a common typo)', () => {
    const { key } = generateApiKey();
    for (let position = API_KEY_PREFIX.length; position < key.length - 1; position++) {
      if (key[position] === key[position + 1]) continue;
      const swapped = key.slice(0, position) + key.charAt(position + 1) + key.charAt(position) + key.slice(position + 2);
      expect(isWellFormedApiKey(swapped)).toBe(false);
    }
  });

  it('rejects a wrong prefix, length or character set', () => {
    const { key } = generateApiKey();
    const body = key.slice(API_KEY_PREFIX.length);
    expect(isWellFormedApiKey(`fix_${body}`)).toBe(false);
    expect(isWellFormedApiKey(`FIN_${body}`)).toBe(false);
    expect(isWellFormedApiKey(body)).toBe(false);
    expect(isWellFormedApiKey(key.slice(0, -1))).toBe(false);
    expect(isWellFormedApiKey(`${key}0`)).toBe(false);
    expect(isWellFormedApiKey(`${key.slice(0, 10)}-${key.slice(11)}`)).toBe(false);
    expect(isWellFormedApiKey(`${key.slice(0, 10)}é${key.slice(11)}`)).toBe(false);
    expect(isWellFormedApiKey(` ${key}`)).toBe(false);
    expect(isWellFormedApiKey('')).toBe(false);
    expect(isWellFormedApiKey(`Bearer ${key}`)).toBe(false);
  });

  it('stores only the SHA-256 of the whole key, and shows only its start', () => {
    const generated = generateApiKey();
    expect(generated.hash).toEqual(createHash('sha256').update(generated.key).digest());
    expect(generated.hash).toHaveLength(32);
    expect(hashApiKey(generated.key)).toEqual(generated.hash);
    expect(generated.displayPrefix).toBe(generated.key.slice(0, 10));
    expect(displayPrefixOf(generated.key)).toBe(generated.displayPrefix);
    expect(generated.displayPrefix.startsWith(API_KEY_PREFIX)).toBe(true);
  });
});
