import { type z } from 'zod';
import { formatZodError } from '../src';

/** The parsed value; fails the test with the readable detail if parsing failed. */
export function ok<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new Error(`expected success, got: ${formatZodError(result.error)}`);
  return result.data;
}

/** The readable detail of a failed parse; fails the test if parsing succeeded. */
export function rejected(schema: z.ZodType, value: unknown): string {
  const result = schema.safeParse(value);
  if (result.success) throw new Error(`expected failure, got: ${JSON.stringify(result.data)}`);
  return formatZodError(result.error, 10_000);
}

export const UUID = '3fa85f64-5717-4562-b3fc-2c963f66afa6';

export function symbols(count: number): string[] {
  return Array.from({ length: count }, (_, index) => `S${index}`);
}
