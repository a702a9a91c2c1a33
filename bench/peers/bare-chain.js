#!/usr/bin/env node
// The bare chain of bench/peers, the ceiling of GET /v1/users/{id}: what the product's path is made of and
// nothing else (no authentication, rate limit, logging or metrics). Two processes, as the gateway and identity:
//   node bare-chain.js grpc   (DATABASE_URL): grpc-js serving the product's GetUser (its generated protobuf
//                              service definition) from a pg pool of 10 with identity's query
//   node bare-chain.js http   (GRPC_TARGET, USER_ENVIRONMENT): Express 5, GET /v1/users/:id -> one GetUser call -> JSON;
//                              with BARE_WORKERS=N (N > 1), N node:cluster workers sharing the port, as the gateway's
// Each prints `listening <port>` once ready (127.0.0.1, a free port).
const grpc = require('@grpc/grpc-js');
const { identity } = require('@secsvc/proto');

const service = { getUser: identity.IdentityServiceService.getUser };

function serveGrpc() {
  const pg = require('pg');
  const db = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, options: '-c search_path=identity' });
  const server = new grpc.Server();
  server.addService(service, {
    getUser(call, callback) {
      db.query(
        'SELECT id, environment, email, name, email_verified, roles, metadata::text AS metadata, created_at, updated_at FROM users WHERE environment = $1 AND id = $2',
        [call.request.environment, call.request.id],
      ).then(({ rows: [u] }) => {
        if (!u) return callback({ code: grpc.status.NOT_FOUND, details: 'user not found' });
        callback(null, {
          id: u.id,
          environment: u.environment,
          email: u.email,
          name: u.name,
          emailVerified: u.email_verified,
          roles: u.roles,
          metadataJson: u.metadata,
          createdAt: u.created_at.toISOString(),
          updatedAt: u.updated_at.toISOString(),
        });
      }, (err) => callback({ code: grpc.status.UNAVAILABLE, details: err.message }));
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) throw err;
    console.log(`listening ${port}`);
  });
}

function serveHttp() {
  const cluster = require('node:cluster');
  const workers = Number(process.env.BARE_WORKERS ?? 1);
  if (workers > 1 && cluster.isPrimary) {
    // Each worker listens on port 0: node:cluster gives them all the same port; the first to listen reports it.
    let reported = false;
    cluster.on('message', (_w, port) => {
      if (!reported) console.log(`listening ${port}`);
      reported = true;
    });
    for (let i = 0; i < workers; i++) cluster.fork();
    process.on('SIGTERM', () => {
      for (const w of Object.values(cluster.workers)) w.kill();
      process.exit(0);
    });
    return;
  }
  const express = require('express');
  const Client = grpc.makeGenericClientConstructor(service, 'IdentityService');
  const client = new Client(process.env.GRPC_TARGET, grpc.credentials.createInsecure(), { 'grpc.enable_retries': 0 });
  const app = express();
  app.get('/v1/users/:id', (req, res) => {
    client.getUser({ environment: process.env.USER_ENVIRONMENT, id: req.params.id }, (err, u) => {
      if (err) return res.status(err.code === grpc.status.NOT_FOUND ? 404 : 503).json({ error: { message: err.details } });
      const { metadataJson, ...user } = u;
      res.json({ data: { ...user, metadata: JSON.parse(metadataJson || '{}') } });
    });
  });
  const server = app.listen(0, '127.0.0.1', () => (cluster.isWorker ? process.send(server.address().port) : console.log(`listening ${server.address().port}`)));
}

if (process.argv[2] === 'grpc') serveGrpc();
else if (process.argv[2] === 'http') serveHttp();
else throw new Error('usage: bare-chain.js grpc|http');
