/**
 * Why the key store refused an operation. `message` is written for the person who asked (the admin CLI prints it
 * as is); `reason` is for code that answers differently per case (the portal's form, its 404).
 */
export type KeyStoreRefusal = 'invalid' | 'not_found' | 'conflict' | 'key_limit';

export class KeyStoreError extends Error {
  constructor(
    readonly reason: KeyStoreRefusal,
    message: string,
  ) {
    super(message);
    this.name = 'KeyStoreError';
  }
}
