import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadGatewayConfig, usableCores } from '../../src/config';

describe('GATEWAY_WORKERS', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gw-cores-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cpuMax = (text: string) => {
    const file = path.join(dir, `cpu.max.${Math.random()}`);
    writeFileSync(file, text);
    return file;
  };

  it('defaults to the cores, capped by a cgroup v2 CPU limit rounded up', () => {
    const cores = os.availableParallelism();
    expect(usableCores(path.join(dir, 'missing'))).toBe(cores);
    expect(usableCores(cpuMax('max 100000\n'))).toBe(cores);
    expect(usableCores(cpuMax('50000 100000\n'))).toBe(1);
    expect(usableCores(cpuMax('150000 100000\n'))).toBe(Math.min(cores, 2));
    expect(usableCores(cpuMax(`${(cores + 8) * 100000} 100000\n`))).toBe(cores);
    expect(loadGatewayConfig({}).GATEWAY_WORKERS).toBe(usableCores());
  });

  it('takes 1 (one process, no cluster) up to 256, and names the variable otherwise', () => {
    expect(loadGatewayConfig({ GATEWAY_WORKERS: '1' }).GATEWAY_WORKERS).toBe(1);
    expect(loadGatewayConfig({ GATEWAY_WORKERS: '4' }).GATEWAY_WORKERS).toBe(4);
    for (const bad of ['0', '257', 'many']) expect(() => loadGatewayConfig({ GATEWAY_WORKERS: bad })).toThrow(/GATEWAY_WORKERS/);
  });
});
