import { z } from 'zod';
import { bool } from './config';

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
