/**
 * Helpers of the MFA suites: an authenticator app's codes (RFC 6238, written here independently of the
 * product's implementation), TOTP enrollment through the API, and the audit entries of a user.
 */
import { createHmac } from 'node:crypto';
import type { Api } from './support';
import { eventually } from './support';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies of varying shapes, asserted field by field
type Json = any;

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** RFC 4648 base32 (no padding, any case) to bytes. */
export function base32Decode(text: string): Buffer {
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of text.toUpperCase().replace(/[=\s]/g, '')) {
    const v = BASE32.indexOf(ch);
    if (v < 0) throw new Error(`base32: ${ch}`);
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 HOTP, 6 digits, HMAC-SHA1: what every authenticator app computes for a time step. */
export function hotp(secret: Buffer, counter: number): string {
  const msg = Buffer.alloc(8);
  msg.writeBigUInt64BE(BigInt(counter));
  const mac = createHmac('sha1', secret).update(msg).digest();
  const offset = mac[mac.length - 1]! & 0x0f;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/** RFC 6238 time step (30 s, T0 = 0). */
export const timeStep = (ms: number) => Math.floor(ms / 30_000);

/**
 * An authenticator app for one TOTP secret. The server accepts the current step and one either side, each code
 * once, and never a step at or before the last one used; `next()` gives a code of a step later than the last one
 * it gave, from the step before the current one (so a test gets three codes without waiting for the clock) to the
 * one after it, else it waits for the clock.
 */
export class Authenticator {
  private last = -1;
  readonly key: Buffer;
  constructor(readonly secret: string) {
    this.key = base32Decode(secret);
  }
  /** The code of the current step, whether or not it was used already. */
  now(): { code: string; step: number } {
    const step = timeStep(Date.now());
    return { code: hotp(this.key, step), step };
  }
  async next(): Promise<string> {
    for (;;) {
      const now = Date.now();
      const step = Math.max(timeStep(now) - 1, this.last + 1);
      // now-1 only while the server's clock cannot leave its step before it checks the code (2 s of margin);
      // never beyond now+1 (a code of now or now+1 stays within the window when the server's clock moves on)
      const ok = step === timeStep(now) - 1 ? now % 30_000 < 28_000 : step <= timeStep(now) + 1;
      if (ok) {
        this.last = step;
        return hotp(this.key, step);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Enrolls and confirms TOTP for a user with the administrator's key; the factor and an app holding its secret. */
export async function enrollTotp(api: Api, userId: string, name = 'Phone'): Promise<{ factor: Json; app: Authenticator }> {
  const started = await api('POST', `/users/${userId}/mfa/totp`, { name });
  if (started.status !== 201) throw new Error(`enroll totp: ${started.status} ${JSON.stringify(started.body)}`);
  const app = new Authenticator(started.body.data.secret);
  const confirmed = await api('POST', `/users/${userId}/mfa/totp/${started.body.data.factor.id}/confirm`, { code: await app.next() });
  if (confirmed.status !== 200) throw new Error(`confirm totp: ${confirmed.status} ${JSON.stringify(confirmed.body)}`);
  return { factor: confirmed.body.data, app };
}

/**
 * The audit log's entries of `events` about `userId` (its actor, its target, or metadata.userId: an
 * administrator's change to the user's factors), each in full (a single lookup carries metadata), once `ok` holds
 * for them: they arrive through identity's outbox and audit's ingestion.
 */
export function auditEntries(api: Api, events: string, userId: string, ok: (entries: Json[]) => boolean, ms = 30_000): Promise<Json[]> {
  return eventually(
    async () => {
      const page = (await api('GET', `/logs?limit=100&events=${events}`)).body?.data as Json[] | undefined;
      const full = await Promise.all((page ?? []).map(async (e) => (await api('GET', `/logs/${e.id}`)).body.data as Json));
      return full.filter((e) => e.actor?.id === userId || e.target?.id === userId || e.metadata?.userId === userId);
    },
    ok,
    ms,
  );
}
