import type { LoggerService } from '@nestjs/common';
import { logCorrelation, selfTracingOn } from './self-tracing';
import { maskUrlCredentials } from './url-credentials';

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LEVELS;

/**
 * Structured JSON logs on stdout; one line per event, credentials inside URLs masked. With self-tracing on,
 * a line written inside a request or a message's handling carries its trace_id, span_id and request_id.
 */
export class JsonLogger implements LoggerService {
  private readonly min: number;
  constructor(
    private readonly service: string,
    level: LogLevel = 'info',
  ) {
    this.min = LEVELS[level];
  }
  log(message: unknown, ...rest: unknown[]): void {
    this.write('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.write('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, rest);
  }
  private write(level: LogLevel, message: unknown, rest: unknown[]): void {
    if (LEVELS[level] < this.min) return;
    const context = typeof rest[rest.length - 1] === 'string' ? (rest.pop() as string) : undefined;
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level, service: this.service };
    if (context) entry.context = context;
    if (selfTracingOn()) Object.assign(entry, logCorrelation());
    if (message instanceof Error) {
      entry.msg = message.message;
      entry.stack = message.stack;
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(entry, message);
    } else {
      entry.msg = String(message);
    }
    for (const r of rest) if (typeof r === 'string' && level === 'error') entry.stack = r;
    process.stdout.write(maskUrlCredentials(JSON.stringify(entry)) + '\n');
  }
}
