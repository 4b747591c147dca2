export {
  AppError,
  badRequest,
  conflict,
  forbidden,
  notFound,
  toAppError,
  tooManyRequests,
  unauthorized,
  type AppErrorOptions,
} from './errors';
