import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { batchMethods, identity } from '@secsvc/proto';
import { createLogger, type Pool } from '@secsvc/shared';
import type { IdentityConfig } from '../config';
import type { SigningKeyStore } from '../domain/signing-keys';
import { identityService } from '.';

// The layering of identity, checked on the sources: one thin file per RPC that reaches the domain only through
// the services, and services that are given their repositories instead of importing them.

const rpcDir = __dirname;
const servicesDir = path.join(__dirname, '..', 'services');
const importsOf = (file: string) => [...readFileSync(file, 'utf8').matchAll(/^import (type )?[^;]*? from '([^']+)';$/gms)].map((m) => ({ typeOnly: !!m[1], from: m[2]! }));
const sources = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'));

describe('identity RPCs', () => {
  const rpcFiles = sources(rpcDir).filter((f) => f !== 'index.ts' && f !== 'messages.ts');

  it('register every method of IdentityService, one file each', () => {
    const rpc = identityService(
      { pool: {} as Pool, config: { SERVER_SECRET: 'x'.repeat(40) } as IdentityConfig, logger: createLogger('test', 'silent') },
      { signingKeys: {} as SigningKeyStore, feed: { whenLive: async () => undefined, subscribe: () => () => undefined } },
    );
    // Batch methods are served from their unary method's implementation (batchMethods).
    const batches: string[] = Object.values(batchMethods.identity);
    const methods = Object.keys(identity.IdentityServiceService).filter((m) => !batches.includes(m));
    expect(Object.keys(rpc).sort()).toEqual([...methods].sort());
    expect(rpcFiles).toHaveLength(methods.length);
  });

  it('import no other RPC and no repository: only services, domain rules and the message encoders', () => {
    const allowed = /^(@secsvc\/(proto|shared)|\.\.\/services\/[\w-]+|\.\.\/domain\/[\w-]+|\.\/messages)$/;
    const strays = rpcFiles.flatMap((file) => importsOf(path.join(rpcDir, file)).filter(({ from }) => !allowed.test(from)).map(({ from }) => `${file}: ${from}`));
    expect(strays).toEqual([]);
  });

  it('are one RPC per file', () => {
    expect(rpcFiles.filter((file) => readFileSync(path.join(rpcDir, file), 'utf8').match(/^export /gm)?.length !== 1)).toEqual([]);
  });
});

describe('identity services', () => {
  it('are given their repositories: only index.ts (the composition) imports them, the services their types', () => {
    const imported = sources(servicesDir)
      .filter((f) => f !== 'index.ts')
      .flatMap((file) => importsOf(path.join(servicesDir, file)).filter(({ typeOnly, from }) => !typeOnly && /\/repositories\//.test(from)).map(({ from }) => `${file}: ${from}`));
    expect(imported).toEqual([]);
  });
});
