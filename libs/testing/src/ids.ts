import { randomBytes } from 'node:crypto';

/** A UUIDv7 whose time is `ms` (its first 48 bits), as the SDKs make run ids. */
export function uuidv7(ms: number): string {
  const b = randomBytes(16);
  b.writeUIntBE(Math.floor(ms), 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
