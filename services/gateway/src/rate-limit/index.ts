export { createRateLimits, type PostgresRateLimits } from './rate-limits';
export { LIMITED_PRODUCTS, type LimitedProduct, type RateLimits } from './types';
