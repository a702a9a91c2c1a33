import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort } from '../stack/ports';
import type { HarnessServerOptions } from './tools';

/**
 * A real Apache Kafka broker for tests: one JVM in KRaft mode (broker and controller in one process) on free
 * 127.0.0.1 ports, its log dir in a fresh temp dir, run from the jars that scripts/install-tools.sh resolves
 * with Maven (scripts/kafka/pom.xml) into ~/.cache/secsvc/kafka-<version>/libs. SECSVC_KAFKA_LIBS points at
 * another folder of the same jars. The broker's own log (warnings and up) goes to `logFile` in the temp dir.
 */

/** The broker version scripts/kafka/pom.xml pins (a test checks they agree). */
export const KAFKA_VERSION = '4.3.0';

export function kafkaLibsDir(): string {
  return process.env.SECSVC_KAFKA_LIBS || path.join(os.homedir(), '.cache', 'secsvc', `kafka-${KAFKA_VERSION}`, 'libs');
}

function javaBin(): string {
  return process.env.JAVA_HOME ? path.join(process.env.JAVA_HOME, 'bin', 'java') : 'java';
}

/**
 * Why no broker can be started here (no jars, no java), or undefined when one can. Test suites skip with this
 * text outside CI; under CI=true they fail with it.
 */
export function kafkaUnavailable(libsDir = kafkaLibsDir()): string | undefined {
  const hasBroker = existsSync(libsDir) && readdirSync(libsDir).some((f) => /^kafka_2\.13-.*\.jar$/.test(f));
  if (!hasBroker) return `no Kafka broker jars in ${libsDir}: run "bash scripts/install-tools.sh" (or set SECSVC_KAFKA_LIBS)`;
  try {
    execFileSync(javaBin(), ['-version'], { stdio: 'ignore' });
  } catch {
    return `no java at ${javaBin()} (the Kafka broker needs Java 17 or newer; set JAVA_HOME or PATH)`;
  }
  return undefined;
}

/** True when a broker at `brokers` accepts a client and is registered in its cluster (within about a second). */
export async function kafkaAnswers(brokers: string[]): Promise<boolean> {
  const admin = new Kafka({ clientId: 'secsvc-test-harness', brokers, logLevel: logLevel.NOTHING, connectionTimeout: 1000, retry: { retries: 0 } }).admin();
  try {
    await admin.connect();
    return (await admin.describeCluster()).brokers.length > 0;
  } catch {
    return false; // not listening or not registered yet
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

export interface KafkaTestBroker {
  /** Bootstrap addresses for clients: the broker listener only, never the controller's. */
  brokers: string[];
  /** The broker's log file (warnings and up, plus anything the JVM prints). */
  logFile: string;
  /** Stops the broker and deletes its temp dir. */
  stop(): Promise<void>;
  /**
   * Stops the broker process (SIGTERM: a controlled shutdown; SIGKILL: a crash) and starts it again on the
   * same ports with the same log dir, resolving once clients can connect again.
   */
  restart(options?: { signal?: 'SIGTERM' | 'SIGKILL' }): Promise<void>;
  /** The broker's process id (while it runs). */
  readonly pid: number | undefined;
  /**
   * Bytes of `topic`'s log segments on the broker's disk, over its partitions: what its record batches take
   * as written (compressed batches stay compressed).
   */
  logBytes(topic: string): number;
  /** With StartKafkaOptions.secure: the SASL_SSL listener's bootstrap address (TLS and SCRAM-SHA-512, as production). */
  secureBrokers?: string[];
}

export interface StartKafkaOptions {
  libsDir?: string;
  /** How long start-up (and each restart) may take (default 90 s). */
  startTimeoutMs?: number;
  /**
   * JVM flags for a fast start (C1 compiler only, class data sharing). On by default; a benchmark that wants
   * the broker's full speed passes false.
   */
  fastStart?: boolean;
  /**
   * A second listener as production's (Strimzi's) is: TLS with this certificate (PEM, PKCS#8 key) and SCRAM-SHA-512
   * for this one user, whose credentials are written when the log dir is formatted. The plain listener stays
   * (the harness's own probe and the controller use it); `secureBrokers` is the secure one's address.
   */
  secure?: { cert: string; key: string; username: string; password: string };
  /** Extra server.properties lines (key → value), e.g. `num.partitions`. */
  properties?: Record<string, string>;
  onUnexpectedExit?: HarnessServerOptions['onUnexpectedExit'];
}

/** A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as `StorageTool random-uuid` makes. */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id; // Kafka avoids ids a command line would read as an option
  }
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n  ');
  } catch {
    return '(no log)';
  }
}

export async function startKafka(options: StartKafkaOptions = {}): Promise<KafkaTestBroker> {
  const libsDir = options.libsDir ?? kafkaLibsDir();
  const problem = kafkaUnavailable(libsDir);
  if (problem) throw new Error(`cannot start a Kafka broker: ${problem}`);

  const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-kafka-'));
  const logFile = path.join(dir, 'broker.log');
  const propsFile = path.join(dir, 'server.properties');
  const [brokerPort, controllerPort] = [await freePort(), await freePort()];
  const brokers = [`127.0.0.1:${brokerPort}`];
  const securePort = options.secure ? await freePort() : undefined;
  const secureListener = securePort ? `,SASL_SSL://127.0.0.1:${securePort}` : '';
  let secureProps: Record<string, string> = {};
  if (options.secure) {
    // Kafka reads a PEM key store from one file: the private key, then the certificate chain.
    const keyStore = path.join(dir, 'keystore.pem');
    await writeFile(keyStore, `${options.secure.key.trim()}\n${options.secure.cert.trim()}\n`, { mode: 0o600 });
    secureProps = {
      'ssl.keystore.type': 'PEM',
      'ssl.keystore.location': keyStore,
      'listener.name.sasl_ssl.sasl.enabled.mechanisms': 'SCRAM-SHA-512',
      'listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config': 'org.apache.kafka.common.security.scram.ScramLoginModule required;',
    };
  }
  const props: Record<string, string> = {
    'process.roles': 'broker,controller',
    'node.id': '1',
    'controller.quorum.bootstrap.servers': `127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${brokerPort},CONTROLLER://127.0.0.1:${controllerPort}${secureListener}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${brokerPort}${secureListener}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': 'CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL',
    ...secureProps,
    'log.dirs': path.join(dir, 'data'),
    // One broker: every internal topic with one replica; few offsets partitions, so the first group is fast.
    'offsets.topic.replication.factor': '1',
    'offsets.topic.num.partitions': '4',
    'transaction.state.log.replication.factor': '1',
    'transaction.state.log.min.isr': '1',
    'share.coordinator.state.topic.replication.factor': '1',
    'share.coordinator.state.topic.min.isr': '1',
    'group.initial.rebalance.delay.ms': '0',
    // After a crash the restarted broker stays fenced until its previous registration's session expired
    // (default 9 s): short sessions make restart() after SIGKILL quick.
    'broker.heartbeat.interval.ms': '500',
    'broker.session.timeout.ms': '2000',
    // Topics are created by their clients (as the event bus adapter does), never by a stray fetch.
    'auto.create.topics.enable': 'false',
    ...options.properties,
  };
  await writeFile(propsFile, Object.entries(props).map(([k, v]) => `${k}=${v}`).join('\n') + '\n');

  const jvm = [
    ...(options.fastStart === false ? [] : ['-XX:TieredStopAtLevel=1', '-Xshare:auto']),
    '-XX:+UseSerialGC',
    '-Djava.awt.headless=true',
    `-Dorg.slf4j.simpleLogger.logFile=${logFile}`,
    '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
    '-Dorg.slf4j.simpleLogger.showDateTime=true',
    '-cp',
    `${libsDir}/*`,
  ];
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR };
  if (process.env.JAVA_HOME) env.JAVA_HOME = process.env.JAVA_HOME;

  const run = (args: string[]): ChildProcess => {
    const out = openSync(logFile, 'a');
    try {
      return spawn(javaBin(), [...jvm, ...args], { env, stdio: ['ignore', out, out] });
    } finally {
      closeSync(out);
    }
  };

  const scram = options.secure ? ['--add-scram', `SCRAM-SHA-512=[name=${options.secure.username},password=${options.secure.password}]`] : [];
  const formatter = run(['kafka.tools.StorageTool', 'format', '-t', clusterId(), '-c', propsFile, '--standalone', ...scram]);
  const formatted = await new Promise<number | null>((resolve) => formatter.once('exit', resolve));
  if (formatted !== 0) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`formatting the Kafka log dir failed (exit ${formatted}):\n  ${tail(logFile)}`);
  }

  const timeoutMs = options.startTimeoutMs ?? 90_000;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  // If the test process dies without stopping us, take the broker along.
  const killOnExit = () => child?.kill('SIGKILL');

  async function startProcess(): Promise<void> {
    const proc = run(['-Xmx512m', 'kafka.Kafka', propsFile]);
    child = proc;
    let gone = false;
    let up = false;
    exited = new Promise<void>((resolve) =>
      proc.once('exit', (code, signal) => {
        gone = true;
        resolve();
        if (up && child === proc) options.onUnexpectedExit?.(code, signal);
      }),
    );
    process.once('exit', killOnExit);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (gone) throw new Error(`the Kafka broker exited during start-up:\n  ${tail(logFile)}`);
      if (await kafkaAnswers(brokers)) {
        up = true;
        return;
      }
      if (Date.now() > deadline) {
        await stopProcess('SIGKILL');
        throw new Error(`the Kafka broker did not accept clients within ${timeoutMs} ms:\n  ${tail(logFile)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function stopProcess(signal: 'SIGTERM' | 'SIGKILL'): Promise<void> {
    const proc = child;
    if (!proc) return;
    child = undefined; // asked to stop: its exit is not a crash
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', killOnExit);
  }

  try {
    await startProcess();
  } catch (err) {
    await stopProcess('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw err;
  }

  return {
    brokers,
    ...(securePort && { secureBrokers: [`127.0.0.1:${securePort}`] }),
    logFile,
    get pid() {
      return child?.pid;
    },
    logBytes(topic: string) {
      const data = path.join(dir, 'data');
      let bytes = 0;
      for (const entry of readdirSync(data)) {
        // A partition's directory is <topic>-<n>; another topic may share the prefix (orders, orders-eu).
        if (!entry.startsWith(`${topic}-`) || !/^\d+$/.test(entry.slice(topic.length + 1))) continue;
        for (const file of readdirSync(path.join(data, entry))) if (file.endsWith('.log')) bytes += statSync(path.join(data, entry, file)).size;
      }
      return bytes;
    },
    async stop() {
      await stopProcess('SIGTERM');
      await rm(dir, { recursive: true, force: true });
    },
    async restart(restartOptions = {}) {
      await stopProcess(restartOptions.signal ?? 'SIGTERM');
      await startProcess();
    },
  };
}
