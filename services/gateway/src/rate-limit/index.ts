export { createRateLimits } from './rate-limits';
export { type RateLimits } from './types';
