/** Line prefix on the identity service's stdout carrying a generated bootstrap key (read by the launcher). */
export const BOOTSTRAP_MARKER = 'secsvc:bootstrap-api-key';
