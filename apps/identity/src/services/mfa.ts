import { randomBytes } from 'node:crypto';
import { AppError, eventOfCall, isUniqueViolation, newId, ROLE_PATTERN, type CallContext, type CallEvent, type EventInput } from '@secsvc/shared';
import { DEFAULT_ISSUER } from '../config';
import { throttleWait } from '../domain/login-throttle';
import {
  authenticationOf,
  CHALLENGE_MAX_ATTEMPTS,
  CHALLENGE_TTL_SECONDS,
  factorNameProblem,
  hashMfaToken,
  looksLikeMfaToken,
  MAX_FACTORS_PER_USER,
  MFA_REQUIRED_MODES,
  mfaRequiredOf,
  totpSealingKey,
  type MfaRequiredMode,
  type ProofType,
} from '../domain/mfa';
import { generateRecoveryCodes, hashRecoveryCode, normalizeRecoveryCode } from '../domain/recovery-codes';
import { open, seal } from '../domain/sealing';
import { SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import { base32Decode, base32Encode, generateTotpSecret, otpauthUri, qrSvgDataUri, verifyTotp } from '../domain/totp';
import {
  authenticationOptions,
  credentialIdOf,
  registrationOptions,
  userHandleOfResponse,
  userIdOfHandle,
  verifyAuthentication,
  verifyRegistration,
  WebAuthnError,
  type RelyingParty,
} from '../domain/webauthn';
import type { ChallengeRow, FactorRow, mfaChallengesRepository, mfaFactorsRepository, mfaFailuresRepository, mfaSettingsRepository, SettingsRow } from '../repositories/mfa';
import type { SessionAuthentication, SessionRow } from '../repositories/sessions';
import type { samlSessionsRepository } from '../repositories/sso';
import type { UserRow } from '../repositories/users';
import type { Database, Db, Outbox } from './ports';
import type { OpenedSession, SessionsRepository, SessionsService } from './sessions';
import type { UsersRepository } from './users';

export interface MfaDeps {
  db: Database;
  factors: typeof mfaFactorsRepository;
  challenges: typeof mfaChallengesRepository;
  settings: typeof mfaSettingsRepository;
  users: Pick<UsersRepository, 'get'>;
  sessions: Pick<SessionsService, 'open'>;
  sessionRows: Pick<SessionsRepository, 'lockActive' | 'stepUp'>;
  /** Failed proofs, counted per user and per ip like failed logins (in their own table). */
  throttle: typeof mfaFailuresRepository;
  outbox: Outbox;
  /** Where a SAML login's session is recorded with its NameID and SessionIndex once its second step opened it. */
  samlSessions?: Pick<typeof samlSessionsRepository, 'record'>;
  serverSecret: string;
  rp: RelyingParty;
  /** The issuer named in authenticator apps (otpauth:// label). */
  issuerName: string;
  now?: () => number;
}

/** The WebAuthn relying party: WEBAUTHN_RP_ID (else ISSUER's host), WEBAUTHN_ORIGINS (else ISSUER's origin). */
export function relyingPartyOf(config: { ISSUER?: string; WEBAUTHN_RP_ID?: string; WEBAUTHN_RP_NAME?: string; WEBAUTHN_ORIGINS?: string }): RelyingParty {
  const issuer = new URL(config.ISSUER ?? DEFAULT_ISSUER);
  return {
    id: config.WEBAUTHN_RP_ID ?? issuer.hostname,
    name: config.WEBAUTHN_RP_NAME ?? 'Security Service',
    origins: config.WEBAUTHN_ORIGINS ? config.WEBAUTHN_ORIGINS.split(',').map((o) => o.trim()) : [issuer.origin],
  };
}

/** What a login established before its second step, kept with its challenge. */
export interface PendingLogin {
  ip: string;
  userAgent: string;
  expiresInSeconds: number;
  oauthClientId: string;
  amr: string[];
  /** user.login's metadata: authMethod (password, oauth or saml) and the client or the SSO connection. */
  loginMethod: Record<string, unknown>;
  /** The session's metadata besides ip and user agent (a SAML login's authMethod and connection). */
  sessionMetadata?: Record<string, unknown>;
  /** A SAML login: its subject, recorded with the session for single logout once the session opens. */
  samlSubject?: Omit<Parameters<typeof samlSessionsRepository.record>[1], 'sessionId'>;
}

/** When loginChallenge asks for a second step beyond the user's factors and the environment's settings. */
export interface ChallengeOptions {
  /** Always a challenge, even for a user without a factor whom the environment does not require MFA of. */
  required?: boolean;
  /**
   * false: a user without a TOTP or passkey cannot enroll one during this step (it is answered with an
   * existing factor or not at all). Default: enrollment when the environment requires MFA of the user.
   */
  enrollment?: boolean;
}

/** A login's second step to be answered: the token (shown once) and what the user can answer it with. */
export interface LoginChallenge {
  token: string;
  expiresAt: Date;
  factors: FactorRow[];
  passkeyOptionsJson: string;
  /** The environment requires MFA of the user, who has no factor yet: TOTP is enrolled with the token first. */
  enrollmentRequired: boolean;
}

export interface Proof {
  type: string;
  code: string;
  credentialJson: string;
}

type Actor = { id?: string; email?: string; type: string };
const userActor = (user: { id: string; email: string }): Actor => ({ id: user.id, email: user.email, type: 'user' });
const factorTarget = (id: string) => ({ id, type: 'mfa_factor' });
const PROOF_TYPES: readonly ProofType[] = ['totp', 'recovery_code', 'passkey'];
const DEFAULT_SESSION_SECONDS = 24 * 3600;

/** A failed proof: why, and the factor kind tried (no secret). */
class ProofFailure {
  constructor(
    readonly reason: string,
    readonly factorType: string,
    readonly field: string,
    readonly message: string,
    /** The login challenge the wrong answer counts against (5 at most). */
    readonly challengeId?: string,
    /** Counted against the ip only: the user could not be named with certainty. */
    readonly ipOnly = false,
  ) {}
}

/** The user or the ip has too many failures in the window: the seconds to wait. */
class Throttled {
  constructor(readonly waitSeconds: number) {}
}

/** The same failure, counted against the login challenge it answered. */
const withChallenge = (f: ProofFailure, challengeId: string) => new ProofFailure(f.reason, f.factorType, f.field, f.message, challengeId, f.ipOnly);

/** The factors that make MFA apply at login: confirmed TOTP and passkeys (recovery codes are a fallback). */
const isPrimaryFactor = (f: FactorRow) => f.confirmed_at !== null && (f.kind === 'totp' || f.kind === 'passkey');

function parseCredential(json: string, field: string): unknown {
  if (!json) throw AppError.field(field, 'is required');
  try {
    return JSON.parse(json) as unknown;
  } catch {
    throw AppError.field(field, 'must be a JSON object (the WebAuthn response)');
  }
}

/** A passkey as WebAuthn options name it (excludeCredentials, allowCredentials). */
const passkeyRef = (f: FactorRow) => ({ id: f.credential_id!, transports: f.transports ?? [] });

/** A TOTP factor just enrolled (pending until a first code): what is shown once. */
export interface EnrolledTotp {
  factor: FactorRow;
  secret: string;
  uri: string;
  qrCode: string;
}

/**
 * Multi-factor authentication: users' factors (TOTP, passkeys, recovery codes), the second step of logins,
 * passwordless passkey logins, step-up of sessions, and the environment's MFA requirement. Every change and
 * every failure has its event; failed proofs are throttled per user and per ip like passwords.
 */
export class MfaService {
  constructor(private readonly deps: MfaDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  private event(db: Db, call: CallContext, environment: string, type: string, e: Omit<CallEvent, 'environment' | 'type'>): Promise<string> {
    return this.deps.outbox.append(db, eventOfCall(call, { environment, type, ...e }));
  }

  private async user(db: Db, environment: string, userId: string): Promise<UserRow> {
    const user = await this.deps.users.get(db, environment, userId);
    if (!user) throw AppError.notFound('User');
    return user;
  }

  private async settingsRequire(db: Db, environment: string, user: UserRow): Promise<boolean> {
    const settings = await this.deps.settings.get(db, environment);
    return mfaRequiredOf(settings, user.roles);
  }

  // --- Factors -------------------------------------------------------------------------------------

  async list(environment: string, userId: string): Promise<{ factors: FactorRow[]; mfaRequired: boolean }> {
    const { db, factors } = this.deps;
    const user = await this.user(db.pool, environment, userId);
    const [rows, mfaRequired] = await Promise.all([factors.list(db.pool, environment, userId), this.settingsRequire(db.pool, environment, user)]);
    return { factors: rows, mfaRequired };
  }

  /** Under the user's lock (factors of one user are added one at a time): refused past the limit. */
  private async roomForFactor(db: Db, userId: string): Promise<void> {
    await this.deps.factors.lockUser(db, userId);
    if ((await this.deps.factors.count(db, userId)) >= MAX_FACTORS_PER_USER) {
      throw new AppError('conflict', `A user has at most ${MAX_FACTORS_PER_USER} factors; remove one first`);
    }
  }

  private static checkName(name: string, fallback: string): string {
    const value = name || fallback;
    const problem = factorNameProblem(value);
    if (problem) throw AppError.field('name', problem);
    return value;
  }

  /** A pending TOTP factor: its secret (base32), the otpauth:// URI and its QR code, shown once. */
  async enrollTotp(environment: string, userId: string, name: string): Promise<EnrolledTotp> {
    const { db } = this.deps;
    const factorName = MfaService.checkName(name, 'Authenticator app');
    const user = await this.user(db.pool, environment, userId);
    const pending = await db.transaction((tx) => this.insertPendingTotp(tx, environment, userId, factorName));
    return this.presentTotp(pending, user.email);
  }

  /** A new pending TOTP factor of the user (room for it checked), with its secret sealed by its id. */
  private async insertPendingTotp(tx: Db, environment: string, userId: string, name: string): Promise<{ factor: FactorRow; secret: Buffer }> {
    const { factors, serverSecret } = this.deps;
    await this.roomForFactor(tx, userId);
    const secret = generateTotpSecret();
    const id = newId('mfa');
    const factor = await factors.insertTotp(tx, { id, environment, userId, name, secret: seal(totpSealingKey(serverSecret), id, base32Encode(secret)) });
    return { factor, secret };
  }

  /** What enrolling shows once: the secret in base32, the otpauth:// URI naming the account, and its QR code. */
  private async presentTotp({ factor, secret }: { factor: FactorRow; secret: Buffer }, account: string): Promise<EnrolledTotp> {
    const uri = otpauthUri({ issuer: this.deps.issuerName, account, secret });
    return { factor, secret: base32Encode(secret), uri, qrCode: await qrSvgDataUri(uri) };
  }

  /** The first code of a pending TOTP factor confirms it (user.mfa.factor_added); a wrong one is a 401 naming `code` (user.mfa.failed). */
  async confirmTotp(environment: string, userId: string, factorId: string, code: string, ip: string, call: CallContext): Promise<FactorRow> {
    const { db, factors } = this.deps;
    const user = await this.user(db.pool, environment, userId);
    return this.attempt(environment, user, ip, call, async (tx) => {
      const factor = await factors.lock(tx, factorId);
      if (!factor || factor.user_id !== userId || factor.environment !== environment || factor.kind !== 'totp') throw AppError.notFound('Factor');
      if (factor.confirmed_at) throw new AppError('conflict', 'This factor is confirmed already');
      const step = this.totpStep(factor, code);
      if (step === undefined) return new ProofFailure('invalid_code', 'totp', 'code', 'is not the current code of this authenticator');
      await factors.confirmTotp(tx, factor.id, step);
      await this.event(tx, call, environment, 'user.mfa.factor_added', {
        target: factorTarget(factor.id),
        result: 'success',
        metadata: { userId, factorType: 'totp', name: factor.name },
      });
      return (await factors.get(tx, environment, userId, factor.id))!;
    });
  }

  /** The matching time step of a TOTP code for this factor (after its last used step), or undefined. */
  private totpStep(factor: FactorRow, code: string): number | undefined {
    if (!factor.secret) return undefined;
    const secret = open(totpSealingKey(this.deps.serverSecret), factor.id, factor.secret);
    return verifyTotp(base32Decode(secret), code, { nowMs: this.now(), lastStep: factor.last_step === null ? null : Number(factor.last_step) });
  }

  /** WebAuthn creation options for a new passkey of the user (their passkeys excluded). */
  async startPasskeyRegistration(environment: string, userId: string): Promise<{ challenge: ChallengeRow; optionsJson: string }> {
    const { db, factors, challenges, rp } = this.deps;
    const user = await this.user(db.pool, environment, userId);
    const existing = (await factors.list(db.pool, environment, userId)).filter((f) => f.kind === 'passkey');
    const { options, challenge } = await registrationOptions(
      rp,
      { id: user.id, name: user.email, displayName: user.name || user.email },
      existing.map(passkeyRef),
    );
    const row = await challenges.insert(db.pool, {
      id: newId('mfc'),
      environment,
      purpose: 'passkey_registration',
      userId,
      webauthnChallenge: challenge,
      ttlSeconds: CHALLENGE_TTL_SECONDS,
    });
    return { challenge: row, optionsJson: JSON.stringify(options) };
  }

  /** The browser's answer to startPasskeyRegistration: a passkey factor (user.mfa.factor_added). */
  async finishPasskeyRegistration(environment: string, userId: string, challengeId: string, name: string, credentialJson: string, call: CallContext): Promise<FactorRow> {
    const { db, factors, challenges, rp } = this.deps;
    const factorName = MfaService.checkName(name, 'Passkey');
    const response = parseCredential(credentialJson, 'credential');
    await this.user(db.pool, environment, userId);
    return db.transaction(async (tx) => {
      const challenge = await challenges.lock(tx, environment, challengeId, 'passkey_registration');
      if (!challenge || challenge.user_id !== userId || !challenge.webauthn_challenge) throw AppError.field('challengeId', 'unknown, used or expired challenge');
      await challenges.use(tx, challenge.id);
      let verified;
      try {
        verified = await verifyRegistration(rp, response, challenge.webauthn_challenge);
      } catch (err) {
        if (err instanceof WebAuthnError) throw AppError.field('credential', `the passkey was not accepted (${err.reason})`);
        throw err;
      }
      await this.roomForFactor(tx, userId);
      if (await factors.findPasskey(tx, environment, verified.credentialId)) throw new AppError('conflict', 'This passkey is registered already');
      const factor = await factors.insertPasskey(tx, {
        id: newId('mfa'),
        environment,
        userId,
        name: factorName,
        credentialId: verified.credentialId,
        publicKey: verified.publicKey,
        counter: verified.counter,
        transports: verified.transports,
        aaguid: verified.aaguid,
        backedUp: verified.backedUp,
      }).catch((err: unknown) => {
        // credential ids are unique across environments (one relying party): a copy registered in the other
        // environment, or by a concurrent registration, is the same conflict, not an internal error
        if (isUniqueViolation(err, 'mfa_factors_credential_id_key')) throw new AppError('conflict', 'This passkey is registered already');
        throw err;
      });
      await this.event(tx, call, environment, 'user.mfa.factor_added', {
        target: factorTarget(factor.id),
        result: 'success',
        metadata: { userId, factorType: 'passkey', name: factor.name, backedUp: verified.backedUp },
      });
      return factor;
    });
  }

  /** A new set of recovery codes (shown once; any earlier set stops working). */
  async regenerateRecoveryCodes(environment: string, userId: string, call: CallContext): Promise<{ factor: FactorRow; codes: string[] }> {
    const { db, factors, serverSecret } = this.deps;
    await this.user(db.pool, environment, userId);
    const codes = generateRecoveryCodes();
    const factor = await db.transaction(async (tx) => {
      const replaced = (await factors.list(tx, environment, userId)).some((f) => f.kind === 'recovery_codes');
      const row = await factors.replaceRecoveryCodes(tx, {
        id: newId('mfa'),
        environment,
        userId,
        name: 'Recovery codes',
        hashes: codes.map((c) => hashRecoveryCode(c, serverSecret)),
      });
      await this.event(tx, call, environment, 'user.mfa.factor_added', {
        target: factorTarget(row.id),
        result: 'success',
        metadata: { userId, factorType: 'recovery_codes', codes: codes.length, replaced },
      });
      return row;
    });
    return { factor, codes };
  }

  async rename(environment: string, userId: string, factorId: string, name: string, call: CallContext): Promise<FactorRow> {
    const { db, factors } = this.deps;
    const factorName = MfaService.checkName(name, '');
    return db.transaction(async (tx) => {
      if (!(await factors.rename(tx, environment, userId, factorId, factorName))) throw AppError.notFound('Factor');
      const row = (await factors.get(tx, environment, userId, factorId))!;
      await this.event(tx, call, environment, 'user.mfa.factor_updated', {
        target: factorTarget(row.id),
        result: 'success',
        metadata: { userId, factorType: row.kind, name: row.name },
      });
      return row;
    });
  }

  /**
   * Removes a factor (user.mfa.factor_removed). The last TOTP or passkey of a user the environment requires MFA
   * of cannot be removed (409): they would be locked out of the second step.
   */
  async remove(environment: string, userId: string, factorId: string, call: CallContext): Promise<void> {
    const { db, factors } = this.deps;
    await db.transaction(async (tx) => {
      // two removals at once must not both see the other's factor as the one left
      await factors.lockUser(tx, userId);
      const user = await this.user(tx, environment, userId);
      const all = await factors.list(tx, environment, userId);
      const factor = all.find((f) => f.id === factorId);
      if (!factor) throw AppError.notFound('Factor');
      const primaries = all.filter(isPrimaryFactor);
      if (isPrimaryFactor(factor) && primaries.length === 1 && (await this.settingsRequire(tx, environment, user))) {
        throw new AppError('conflict', 'MFA is required for this user: add another factor before removing the last one', [
          { field: 'factorId', message: 'is the last factor of a user who must use MFA' },
        ]);
      }
      await factors.delete(tx, environment, userId, factorId);
      await this.event(tx, call, environment, 'user.mfa.factor_removed', {
        target: factorTarget(factor.id),
        result: 'success',
        metadata: { userId, factorType: factor.kind, name: factor.name },
      });
    });
  }

  // --- Proofs --------------------------------------------------------------------------------------

  /**
   * One attempt at a proof, in one transaction: attempts of the same user (and of the same ip) wait for each
   * other, the throttle is read inside (so guesses in parallel are counted like guesses in a row), and a
   * failed proof is recorded in that same transaction (the throttle, the challenge's attempts, user.mfa.failed)
   * before the answer: 401 (or 400 for a malformed proof), 429 with the wait once a limit is reached. A success
   * clears the user's failures. `user` undefined: nobody could be named (counted per ip only).
   */
  private async attempt<T>(environment: string, user: UserRow | undefined, ip: string, call: CallContext, body: (tx: Db) => Promise<T | ProofFailure>): Promise<T> {
    const { db, throttle, challenges } = this.deps;
    const from = ip || 'unknown';
    const outcome = await db.transaction(async (tx): Promise<T | ProofFailure | Throttled> => {
      await throttle.serialize(tx, user?.id ?? null, from);
      const wait = throttleWait(await throttle.counts(tx, environment, user?.id ?? null, from));
      if (wait !== undefined) return new Throttled(wait);
      const result = await body(tx);
      if (!(result instanceof ProofFailure)) {
        if (user) await throttle.clear(tx, environment, user.id);
        return result;
      }
      const named = user && !result.ipOnly ? user : undefined;
      await throttle.record(tx, environment, named?.id ?? null, from);
      if (result.challengeId) await challenges.fail(tx, result.challengeId, CHALLENGE_MAX_ATTEMPTS);
      await this.event(tx, call, environment, 'user.mfa.failed', {
        actor: named ? userActor(named) : { type: 'anonymous' },
        target: named ? { id: named.id, type: 'user' } : undefined,
        result: 'failure',
        metadata: { factorType: result.factorType, reason: result.reason },
      });
      return result;
    });
    if (outcome instanceof Throttled) throw new AppError('rate_limited', 'Too many failed second-factor attempts; try again later', [], outcome.waitSeconds);
    if (!(outcome instanceof ProofFailure)) return outcome;
    if (outcome.reason === 'invalid_request') throw AppError.field(outcome.field, outcome.message);
    throw new AppError('unauthorized', 'The second factor was not accepted', [{ field: outcome.field, message: outcome.message }]);
  }

  /**
   * Checks a proof of one of the user's factors in `tx` (the factor locked, its step, counter or code spent):
   * the proof type, or a ProofFailure.
   */
  private async verifyProof(
    tx: Db,
    environment: string,
    userId: string,
    proof: Proof,
    webauthnChallenge: string | null,
    /** A TOTP factor enrolled during this login (enrollment required): its first code confirms it. */
    enrolling?: string,
  ): Promise<{ type: ProofType; factorId: string; enrolled?: FactorRow } | ProofFailure> {
    const { factors, serverSecret, rp } = this.deps;
    const type = proof.type as ProofType;
    if (!PROOF_TYPES.includes(type)) return new ProofFailure('invalid_request', String(proof.type).slice(0, 32), 'type', 'must be totp, recovery_code or passkey');
    const all = await factors.list(tx, environment, userId);
    if (type === 'totp') {
      if (!proof.code) return new ProofFailure('invalid_request', type, 'code', 'is required');
      for (const f of all.filter((x) => x.kind === 'totp' && (x.confirmed_at || x.id === enrolling))) {
        const locked = (await factors.lock(tx, f.id))!;
        const step = this.totpStep(locked, proof.code);
        if (step === undefined) continue;
        if (locked.confirmed_at) {
          await factors.useTotp(tx, f.id, step);
          return { type, factorId: f.id };
        }
        await factors.confirmTotp(tx, f.id, step);
        return { type, factorId: f.id, enrolled: locked };
      }
      return new ProofFailure('invalid_code', type, 'code', 'is not a current code of an authenticator of this user, or was used already');
    }
    if (type === 'recovery_code') {
      const normalized = normalizeRecoveryCode(proof.code);
      if (!normalized) return new ProofFailure(proof.code ? 'invalid_code' : 'invalid_request', type, 'code', proof.code ? 'is not a recovery code of this user' : 'is required');
      const factorId = await factors.useRecoveryCode(tx, userId, hashRecoveryCode(normalized, serverSecret));
      return factorId ? { type, factorId } : new ProofFailure('invalid_code', type, 'code', 'is not an unused recovery code of this user');
    }
    // passkey
    if (!webauthnChallenge) return new ProofFailure('invalid_request', type, 'credential', 'no passkey challenge was issued for this step');
    let response: unknown;
    try {
      response = parseCredential(proof.credentialJson, 'credential');
    } catch (err) {
      return new ProofFailure('invalid_request', type, 'credential', (err as AppError).details[0]?.message ?? 'is invalid');
    }
    const credentialId = credentialIdOf(response);
    const factor = credentialId ? all.find((f) => f.kind === 'passkey' && f.credential_id === credentialId) : undefined;
    if (!factor) return new ProofFailure('unknown_credential', type, 'credential', 'is not a passkey of this user');
    const locked = (await factors.lock(tx, factor.id))!;
    try {
      const { newCounter } = await verifyAuthentication(rp, response, webauthnChallenge, {
        id: locked.credential_id!,
        publicKey: locked.public_key!,
        counter: Number(locked.sign_count ?? 0),
        transports: locked.transports ?? [],
      });
      await factors.usePasskey(tx, factor.id, newCounter);
      return { type, factorId: factor.id };
    } catch (err) {
      if (!(err instanceof WebAuthnError)) throw err;
      const reason = err.reason === 'counter' ? 'cloned_authenticator' : `passkey_${err.reason}`;
      return new ProofFailure(reason, type, 'credential', err.reason === 'counter' ? 'the signature counter went backwards (a cloned authenticator?)' : `was not accepted (${err.reason})`);
    }
  }

  // --- Logins --------------------------------------------------------------------------------------

  /**
   * Whether a login of `user` needs a second step: the user has a confirmed TOTP or passkey, or the
   * environment requires MFA of them, or the caller requires it (`options.required`: a SAML connection that
   * requires MFA the IdP did not assert). Then the challenge (token shown once) replaces the session. A user
   * without a TOTP or passkey enrolls one in the step only when the environment requires MFA of them and the
   * caller allows it; otherwise such a challenge offers what the user has (recovery codes), or nothing.
   */
  async loginChallenge(tx: Db, environment: string, userId: string, pending: PendingLogin, options: ChallengeOptions = {}): Promise<LoginChallenge | undefined> {
    const { factors, challenges, rp, serverSecret } = this.deps;
    const all = (await factors.list(tx, environment, userId)).filter((f) => f.confirmed_at);
    const primaries = all.filter(isPrimaryFactor);
    const environmentRequires = primaries.length === 0 && (await this.settingsRequire(tx, environment, await this.user(tx, environment, userId)));
    if (primaries.length === 0 && !environmentRequires && !options.required) return undefined;
    const enrollmentRequired = environmentRequires && options.enrollment !== false;
    const token = `mft_${randomBytes(32).toString('base64url')}`;
    const passkeys = all.filter((f) => f.kind === 'passkey');
    const webauthn = passkeys.length ? await authenticationOptions(rp, passkeys.map(passkeyRef)) : undefined;
    const row = await challenges.insert(tx, {
      id: newId('mfc'),
      environment,
      purpose: 'login',
      userId,
      tokenHash: hashMfaToken(token, serverSecret),
      webauthnChallenge: webauthn?.challenge,
      // A user without a TOTP or passkey who may not enroll one here: enrollTotpForLogin refuses this token.
      // Enrollment at login only where it was allowed when the challenge was made (a factor removed since
      // does not open it).
      data: { ...pending, enrollment: primaries.length === 0 && enrollmentRequired },
      ttlSeconds: CHALLENGE_TTL_SECONDS,
    });
    return { token, expiresAt: row.expires_at, factors: all, passkeyOptionsJson: webauthn ? JSON.stringify(webauthn.options) : '', enrollmentRequired };
  }

  /** The login's second step: the session (amr with the factor), user.login with mfaUsed; a wrong proof is a 401. */
  async completeLogin(environment: string, token: string, proof: Proof, origin: { ip: string; userAgent: string }, call: CallContext): Promise<OpenedSession> {
    const { db, challenges, serverSecret } = this.deps;
    if (!looksLikeMfaToken(token)) throw AppError.field('mfaToken', 'unknown, used or expired token');
    const tokenHash = hashMfaToken(token, serverSecret);
    // Whose challenge it is (the attempt serializes per user), read without a lock; locked again inside the attempt.
    const peek = await challenges.lockLogin(db.pool, environment, tokenHash, true);
    if (!peek || !peek.user_id) throw AppError.field('mfaToken', 'unknown, used or expired token');
    const user = await this.user(db.pool, environment, peek.user_id);
    const ip = origin.ip || (peek.data.ip as string) || 'unknown';
    return this.attempt(environment, user, ip, call, async (tx) => {
      const challenge = await challenges.lockLogin(tx, environment, tokenHash);
      if (!challenge) return new ProofFailure('invalid_request', String(proof.type).slice(0, 32), 'mfaToken', 'unknown, used or expired token');
      const verified = await this.verifyProof(tx, environment, user.id, proof, challenge.webauthn_challenge, challenge.data.enrollingFactorId as string | undefined);
      if (verified instanceof ProofFailure) return withChallenge(verified, challenge.id);
      await challenges.use(tx, challenge.id);
      if (verified.enrolled) {
        await this.event(tx, call, environment, 'user.mfa.factor_added', {
          actor: userActor(user),
          target: factorTarget(verified.factorId),
          result: 'success',
          metadata: { userId: user.id, factorType: 'totp', name: verified.enrolled.name, atLogin: true },
        });
      }
      const pending = challenge.data as unknown as PendingLogin;
      const auth = { ...authenticationOf(pending.amr ?? ['pwd'], verified.type), mfa: true };
      return this.openLoginSession(tx, environment, user, pending, auth, verified, call);
    });
  }

  private async openLoginSession(
    tx: Db,
    environment: string,
    user: UserRow,
    pending: Pick<PendingLogin, 'ip' | 'userAgent' | 'expiresInSeconds' | 'loginMethod' | 'sessionMetadata' | 'samlSubject'>,
    auth: SessionAuthentication,
    verified: { type: ProofType; factorId: string },
    call: CallContext,
  ): Promise<OpenedSession> {
    const context = { ip: pending.ip, userAgent: pending.userAgent };
    const metadata = { ...context, ...pending.sessionMetadata };
    const opened = await this.deps.sessions.open(tx, environment, user.id, pending.expiresInSeconds || DEFAULT_SESSION_SECONDS, metadata, auth);
    if (pending.samlSubject) {
      // A SAML login's session, opened only now: remembered with its NameID and SessionIndex (single logout).
      if (!this.deps.samlSessions) throw new AppError('internal_error', 'SAML sessions cannot be recorded here');
      await this.deps.samlSessions.record(tx, { ...pending.samlSubject, sessionId: opened.row.id });
    }
    const event: EventInput = {
      ...eventOfCall(call, {
        environment,
        type: 'user.login',
        actor: userActor(user),
        target: { id: opened.row.id, type: 'session' },
        result: 'success',
        metadata: { ...pending.loginMethod, mfaUsed: true, mfaFactor: verified.type, factorId: verified.factorId, amr: auth.amr },
      }),
      context,
    };
    await this.deps.outbox.append(tx, event);
    return opened;
  }

  /**
   * TOTP enrollment inside a login's second step, for a user the environment requires MFA of who has no
   * factor yet (the challenge's token authorizes it; a new enrollment replaces an earlier pending one of the
   * same challenge). The first code given to completeLogin confirms it.
   */
  async enrollTotpForLogin(environment: string, token: string, name: string): Promise<EnrolledTotp> {
    const { db, factors, challenges, serverSecret } = this.deps;
    const factorName = MfaService.checkName(name, 'Authenticator app');
    if (!looksLikeMfaToken(token)) throw AppError.field('mfaToken', 'unknown, used or expired token');
    const { pending, email } = await db.transaction(async (tx) => {
      const challenge = await challenges.lockLogin(tx, environment, hashMfaToken(token, serverSecret));
      if (!challenge || !challenge.user_id) throw AppError.field('mfaToken', 'unknown, used or expired token');
      const user = await this.user(tx, environment, challenge.user_id);
      if ((await factors.list(tx, environment, user.id)).some(isPrimaryFactor)) {
        throw new AppError('conflict', 'This user has a factor already: answer the challenge with it');
      }
      if (challenge.data.enrollment !== true) {
        throw new AppError('conflict', 'This login cannot enroll a factor: an administrator must set one up for the user', [
          { field: 'mfaToken', message: 'is answered with an existing factor only' },
        ]);
      }
      const earlier = challenge.data.enrollingFactorId;
      if (typeof earlier === 'string') await factors.delete(tx, environment, user.id, earlier);
      const inserted = await this.insertPendingTotp(tx, environment, user.id, factorName);
      await challenges.setData(tx, challenge.id, { ...challenge.data, enrollingFactorId: inserted.factor.id });
      return { pending: inserted, email: user.email };
    });
    return this.presentTotp(pending, email);
  }

  /** A WebAuthn authentication challenge: passwordless (no user) or for a user's step-up. */
  async startPasskeyAuthentication(environment: string, userId: string): Promise<{ challenge: ChallengeRow; optionsJson: string }> {
    const { db, factors, challenges, rp } = this.deps;
    let allow: { id: string; transports: string[] }[] = [];
    if (userId) {
      await this.user(db.pool, environment, userId);
      allow = (await factors.list(db.pool, environment, userId))
        .filter((f) => f.kind === 'passkey')
        .map(passkeyRef);
      if (allow.length === 0) throw new AppError('conflict', 'This user has no passkey');
    }
    const { options, challenge } = await authenticationOptions(rp, allow);
    const row = await challenges.insert(db.pool, {
      id: newId('mfc'),
      environment,
      purpose: 'passkey_authentication',
      userId: userId || null,
      webauthnChallenge: challenge,
      ttlSeconds: CHALLENGE_TTL_SECONDS,
    });
    return { challenge: row, optionsJson: JSON.stringify(options) };
  }

  /** A passwordless login with a discoverable passkey: a session with amr hwk+user+mfa. */
  async completePasskeyLogin(
    environment: string,
    input: { challengeId: string; credentialJson: string; ip: string; userAgent: string; expiresInSeconds: number; oauthClientId: string },
    call: CallContext,
  ): Promise<OpenedSession> {
    const { db, challenges } = this.deps;
    const seconds = input.expiresInSeconds || DEFAULT_SESSION_SECONDS;
    if (seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) throw AppError.field('expiresIn', 'must be from 1m to 30d');
    const response = parseCredential(input.credentialJson, 'credential');
    const handle = userHandleOfResponse(response);
    const userId = handle ? userIdOfHandle(handle) : undefined;
    const user = userId ? await this.deps.users.get(db.pool, environment, userId) : undefined;
    const loginMethod = input.oauthClientId ? { authMethod: 'oauth', clientId: input.oauthClientId.slice(0, 64) } : { authMethod: 'passkey' };
    // The user handle is not signed: a failure counts against the user it names only when the credential is one
    // of that user's passkeys and did not verify (else anyone could throttle any user by naming them).
    return this.attempt(environment, user, input.ip, call, async (tx) => {
      const challenge = await challenges.lock(tx, environment, input.challengeId, 'passkey_authentication');
      if (!challenge || challenge.user_id !== null) return new ProofFailure('invalid_request', 'passkey', 'challengeId', 'unknown, used or expired challenge', undefined, true);
      await challenges.use(tx, challenge.id);
      if (!user) return new ProofFailure('unknown_credential', 'passkey', 'credential', 'is not a passkey of this environment', undefined, true);
      const verified = await this.verifyProof(tx, environment, user.id, { type: 'passkey', code: '', credentialJson: input.credentialJson }, challenge.webauthn_challenge);
      // Not a passkey of the user the handle names: the ip's failure, not theirs.
      if (verified instanceof ProofFailure) return verified.reason === 'unknown_credential' ? new ProofFailure(verified.reason, 'passkey', verified.field, verified.message, undefined, true) : verified;
      const auth = { ...authenticationOf([], 'passkey'), mfa: true };
      return this.openLoginSession(tx, environment, user, { ip: input.ip, userAgent: input.userAgent, expiresInSeconds: seconds, loginMethod }, auth, verified, call);
    });
  }

  /** Step-up of an active session with a factor's proof (user.mfa.step_up): the session with its new mfa_at and amr. */
  async stepUp(environment: string, input: { sessionId: string; userId: string; proof: Proof; challengeId: string; ip: string }, call: CallContext): Promise<SessionRow> {
    const { db, challenges, sessionRows } = this.deps;
    const user = await this.user(db.pool, environment, input.userId);
    return this.attempt(environment, user, input.ip, call, async (tx) => {
      let webauthnChallenge: string | null = null;
      if (input.proof.type === 'passkey') {
        const challenge = input.challengeId ? await challenges.lock(tx, environment, input.challengeId, 'passkey_authentication') : undefined;
        if (!challenge || challenge.user_id !== user.id) return new ProofFailure('invalid_request', 'passkey', 'challengeId', 'unknown, used or expired challenge');
        await challenges.use(tx, challenge.id);
        webauthnChallenge = challenge.webauthn_challenge;
      }
      const verified = await this.verifyProof(tx, environment, user.id, input.proof, webauthnChallenge);
      if (verified instanceof ProofFailure) return verified;
      const current = await sessionRows.lockActive(tx, environment, user.id, input.sessionId);
      if (!current) throw new AppError('unauthorized', 'Invalid or expired session');
      const { amr, acr } = authenticationOf(current.amr, verified.type);
      const row = await sessionRows.stepUp(tx, environment, user.id, input.sessionId, amr, acr);
      if (!row) throw new AppError('unauthorized', 'Invalid or expired session');
      await this.event(tx, call, environment, 'user.mfa.step_up', {
        actor: userActor(user),
        target: { id: row.id, type: 'session' },
        result: 'success',
        metadata: { mfaUsed: true, mfaFactor: verified.type, factorId: verified.factorId, amr },
      });
      return row;
    });
  }

  // --- Settings ------------------------------------------------------------------------------------

  getSettings(environment: string): Promise<SettingsRow> {
    return this.deps.settings.get(this.deps.db.pool, environment);
  }

  async updateSettings(environment: string, required: string, roles: string[], call: CallContext): Promise<SettingsRow> {
    const faults = [];
    if (!(MFA_REQUIRED_MODES as readonly string[]).includes(required)) faults.push({ field: 'required', message: `must be ${MFA_REQUIRED_MODES.join(', ').replace(/, (\w+)$/, ' or $1')}` });
    roles.forEach((r, i) => {
      if (!ROLE_PATTERN.test(r)) faults.push({ field: `roles[${i}]`, message: 'must be a role such as role_admin' });
    });
    if (required === 'roles' && roles.length === 0) faults.push({ field: 'roles', message: 'must name at least one role when required is roles' });
    if (roles.length > 100) faults.push({ field: 'roles', message: 'must have at most 100 roles' });
    if (faults.length) throw AppError.invalid(faults);
    const { db, settings } = this.deps;
    return db.transaction(async (tx) => {
      const row = await settings.put(tx, environment, required as MfaRequiredMode, required === 'roles' ? [...new Set(roles)] : []);
      await this.event(tx, call, environment, 'mfa.settings.updated', { result: 'success', metadata: { required: row.required, roles: row.roles } });
      return row;
    });
  }
}
