// The ES module entry: the same classes as the CommonJS build (one copy, so `instanceof` holds whichever way a
// program loads the package).
export * from './index.js';
