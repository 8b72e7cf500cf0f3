import { z } from 'zod';
import { bool, kafkaConfigShape } from './config';

describe('bool settings', () => {
  const schema = z.object({ FLAG: bool(false), ON: bool(true) });

  it('read the same words as boolean query parameters, and fall back when unset', () => {
    expect(schema.parse({ FLAG: 'True', ON: 'off' })).toEqual({ FLAG: true, ON: false });
    expect(schema.parse({ FLAG: '1', ON: 'FALSE' })).toEqual({ FLAG: true, ON: false });
    expect(schema.parse({})).toEqual({ FLAG: false, ON: true });
  });

  it('refuse a value that is no boolean', () => {
    expect(schema.safeParse({ FLAG: 'enabled' }).success).toBe(false);
  });
});

describe('KAFKA_SESSION_TIMEOUT_MS', () => {
  const schema = z.object(kafkaConfigShape);
  const base = { KAFKA_BROKERS: '127.0.0.1:9092' };

  it('is 30 s unless set, and takes a value the broker accepts by default', () => {
    expect(schema.parse(base).KAFKA_SESSION_TIMEOUT_MS).toBe(30_000);
    expect(schema.parse({ ...base, KAFKA_SESSION_TIMEOUT_MS: '10000' }).KAFKA_SESSION_TIMEOUT_MS).toBe(10_000);
  });

  it("refuses one outside the broker's group.min/max.session.timeout.ms", () => {
    for (const v of ['5999', '300001', '10s']) expect(schema.safeParse({ ...base, KAFKA_SESSION_TIMEOUT_MS: v }).success).toBe(false);
  });
});
