import { createCipheriv, randomBytes } from 'node:crypto';
import { parseConfig } from '@fin/config';
import { SecretsError, createKeyring, customerToolsConfigShape, keyringFromConfig, parseEncryptionKey, type EncryptionKey } from '../src';
import { openHeaders, sealHeaders } from '../src/secrets';

const key = (id: string): EncryptionKey => ({ id, key: randomBytes(32) });
const context = { tenantId: '9b0f7c5e-1d0a-4a53-9b5e-0c6a1f1c2d3e', toolId: '1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b' };

describe('header secrets at rest', () => {
  it('seals with AES-256-GCM under the current key id, and opens again', () => {
    const keyring = createKeyring(key('k1'));
    const sealed = sealHeaders(keyring, { Authorization: 'Bearer s3cret' }, context);
    expect(sealed).not.toBeNull();
    expect(sealed?.toString('latin1')).not.toContain('s3cret');
    expect(keyring.keyIdOf(sealed as Buffer)).toBe('k1');
    expect(openHeaders(keyring, sealed, context)).toEqual({ Authorization: 'Bearer s3cret' });
  });

  it('stores nothing for no headers', () => {
    expect(sealHeaders(createKeyring(key('k1')), {}, context)).toBeNull();
    expect(openHeaders(createKeyring(key('k1')), null, context)).toEqual({});
  });

  it('binds a ciphertext to its tenant and tool: copied onto another row it does not open', () => {
    const keyring = createKeyring(key('k1'));
    const sealed = sealHeaders(keyring, { 'X-Key': 'v' }, context) as Buffer;
    expect(() => openHeaders(keyring, sealed, { ...context, toolId: '00000000-0000-4000-8000-000000000000' })).toThrow(SecretsError);
    const tampered = Buffer.from(sealed);
    tampered[tampered.length - 1] = (tampered[tampered.length - 1] ?? 0) ^ 1;
    expect(() => openHeaders(keyring, tampered, context)).toThrow(/failed authentication/);
  });

  it('refuses a value whose GCM tag was cut short, even when the short tag is right (a 4-byte tag is forged in 2^32 tries)', () => {
    const material = key('k1');
    const keyring = createKeyring(material);
    // The layout of a sealed value, with only the first 4 bytes of a correct tag over an empty ciphertext.
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', material.key, iv);
    cipher.setAAD(Buffer.from(`fin-customer-tool-headers-v1:${context.tenantId}:${context.toolId}`, 'utf8'));
    cipher.final();
    const short = Buffer.concat([Buffer.from([1, 2]), Buffer.from('k1', 'ascii'), iv, cipher.getAuthTag().subarray(0, 4)]);
    expect(() => keyring.open(short, context)).toThrow(SecretsError);
  });

  it('rotates: a new current key seals, the previous one still opens old values, and an unknown key is named', () => {
    const old = key('k1');
    const sealedOld = sealHeaders(createKeyring(old), { 'X-Key': 'v1' }, context) as Buffer;
    const rotated = createKeyring(key('k2'), [old]);
    expect(openHeaders(rotated, sealedOld, context)).toEqual({ 'X-Key': 'v1' });
    expect(rotated.keyIdOf(sealHeaders(rotated, { 'X-Key': 'v2' }, context) as Buffer)).toBe('k2');
    expect(() => openHeaders(createKeyring(key('k3')), sealedOld, context)).toThrow('sealed with key "k1", which is not configured');
  });

  it('parses keys from config without ever echoing them', () => {
    const material = randomBytes(32).toString('base64');
    expect(parseEncryptionKey(`2025-11:${material}`)).toMatchObject({ id: '2025-11' });
    const short = randomBytes(16).toString('base64');
    const problem = parseEncryptionKey(`k1:${short}`);
    expect(problem).toBe('key k1: expected exactly 32 bytes, base64-encoded');
    expect(parseEncryptionKey(material)).toMatch(/expected <key id>:/);
    const config = parseConfig(customerToolsConfigShape, {
      CUSTOMER_TOOLS_ENCRYPTION_KEY: `k2:${material}`,
      CUSTOMER_TOOLS_PREVIOUS_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
    });
    expect(config.CUSTOMER_TOOLS_ALLOW_LOOPBACK).toBe(false);
    expect(keyringFromConfig(config).current.id).toBe('k2');
    expect(() => parseConfig(customerToolsConfigShape, { CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${short}` })).toThrow(
      /CUSTOMER_TOOLS_ENCRYPTION_KEY/,
    );
    try {
      parseConfig(customerToolsConfigShape, { CUSTOMER_TOOLS_ENCRYPTION_KEY: `k1:${short}` });
    } catch (error) {
      expect(String(error)).not.toContain(short);
    }
  });
});
