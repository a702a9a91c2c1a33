import { keyStatus, type ApiKey } from './api-keys';

const LABELS = { active: 'Active', revoked: 'Revoked', expired: 'Expired' } as const;

export function KeyStatusChip({ apiKey }: { apiKey: Pick<ApiKey, 'revokedAt' | 'expiresAt'> }) {
  const status = keyStatus(apiKey);
  return <span className={`status status-${status}`}>{LABELS[status]}</span>;
}
