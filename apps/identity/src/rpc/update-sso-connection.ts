import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SsoConnectionsService } from '../services/sso-connections';
import { toConnectionMessage } from './messages';

export const updateSsoConnection =
  (connections: SsoConnectionsService) =>
  async (req: identity.UpdateSsoConnectionRequest, call: CallContext): Promise<identity.SsoConnection> => {
    const changes = {
      name: req.name,
      idpMetadataXml: req.idpMetadataXml,
      idpEntityId: req.idpEntityId,
      idpSsoUrl: req.idpSsoUrl,
      idpCertificates: req.idpCertificates?.values,
      domains: req.domains?.values,
      defaultRoles: req.defaultRoles?.values,
      attributeMappingJson: req.attributeMappingJson,
      allowIdpInitiated: req.allowIdpInitiated,
      initiateLoginUrl: req.initiateLoginUrl,
      allowSha1Signatures: req.allowSha1Signatures,
      requireMfa: req.requireMfa,
    };
    return toConnectionMessage(await connections.update(environmentOf(req.environment), req.id, changes, call));
  };
