#!/usr/bin/env node
// Checks an audit log export offline, with nothing but Node: the file's SHA-256 and size against its manifest,
// the manifest's Ed25519 signature and the signed checkpoint inside it, with the keys of GET /v1/logs/keys.
//
//   node scripts/verify-export.js <export file> <manifest.json> <keys.json>
//
// manifest.json: the `manifest` of GET /v1/logs/export/{id} (or the whole answer); keys.json: the answer of
// GET /v1/logs/keys (or its `keys`). Prints what it checked; exit code 0 when everything holds, 1 otherwise,
// 2 on bad arguments.
const { createHash, createPublicKey, verify } = require('node:crypto');
const fs = require('node:fs');

function fail(message, code = 1) {
  process.stderr.write(`verify-export: ${message}\n`);
  process.exit(code);
}

const [file, manifestPath, keysPath] = process.argv.slice(2);
if (!file || !manifestPath || !keysPath) fail('usage: node scripts/verify-export.js <export file> <manifest.json> <keys.json>', 2);

const readJson = (p) => {
  try {
    return JSON.parse(fs.readFileSync(p, 'utf8'));
  } catch (err) {
    return fail(`${p}: ${err.message}`, 2);
  }
};
let manifest = readJson(manifestPath);
manifest = manifest.data?.manifest ?? manifest.manifest ?? manifest;
const jwks = readJson(keysPath);
const keys = jwks.data?.keys ?? jwks.keys ?? [];

function keyOf(kid) {
  const jwk = keys.find((k) => k.kid === kid);
  if (!jwk) fail(`no key ${kid} in ${keysPath}`);
  return createPublicKey({ key: jwk, format: 'jwk' });
}
const signed = (text, signature, kid) => verify(null, Buffer.from(text), keyOf(kid), Buffer.from(signature, 'base64url'));

// 1. The manifest is the service's: its signature over everything but the signature, in the order given.
const { signature, ...unsigned } = manifest;
if (typeof signature !== 'string' || !signed(`secsvc-export-manifest-v1\n${JSON.stringify(unsigned)}`, signature, manifest.kid)) {
  fail('the manifest signature does not verify: the manifest was altered or not made by this service');
}
// 2. The file is the one the manifest describes.
const bytes = fs.readFileSync(file);
const sha256 = createHash('sha256').update(bytes).digest('hex');
if (bytes.length !== manifest.file.sizeBytes) fail(`size ${bytes.length} bytes, the manifest says ${manifest.file.sizeBytes}`);
if (sha256 !== manifest.file.sha256) fail(`SHA-256 ${sha256}, the manifest says ${manifest.file.sha256}`);
// 3. The checkpoint it names is signed too (where the log's hash chain stood when the export completed).
const c = manifest.checkpoint;
if (c && !signed(`secsvc-audit-checkpoint-v1\n${c.environment}\n${c.position}\n${c.hash}\n${c.signedAt}`, c.signature, c.kid)) {
  fail('the checkpoint signature does not verify');
}
process.stdout.write(
  `intact: ${manifest.exportId} (${manifest.environment}, ${manifest.format}), ${manifest.file.records} records, ${bytes.length} bytes, sha256 ${sha256}` +
    (c ? `; log checkpoint at position ${c.position} (${c.signedAt})` : '') +
    '\n',
);
