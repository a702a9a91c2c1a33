/** Line prefix on the identity service's stdout carrying a generated bootstrap key (read by the launcher). */
export const BOOTSTRAP_MARKER = 'secsvc:bootstrap-api-key';

/**
 * The highest audit log chain position a verification range may name (GET /v1/logs/verify): 15 digits, so every
 * position is exact in a double and in the int64 the audit service decodes into a JavaScript number.
 */
export const CHAIN_POSITION_MAX = 999_999_999_999_999;
/** The refusal of a `from` or `to` that is not a chain position up to CHAIN_POSITION_MAX. */
export const CHAIN_POSITION_MESSAGE = `must be a chain position (an integer from 1 to ${CHAIN_POSITION_MAX})`;
