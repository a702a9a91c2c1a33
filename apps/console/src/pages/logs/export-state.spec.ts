import { downloadHref, fileName, formatBytes, progressOf, StartedExports, type LogExport } from './export-state';

const base: LogExport = { exportId: 'exp_1', status: 'processing', format: 'csv', estimatedRecords: 200, createdAt: '2026-03-10T12:00:00.000Z' };

describe('an export as the console shows it', () => {
  it('shows the progress the API reports, at most 99 until completed', () => {
    expect(progressOf({ ...base, processedRecords: 50, percent: 25 })).toEqual({ value: 25, text: 'Processing: 50 entries of about 200 entries written' });
    expect(progressOf({ ...base, processedRecords: 300 }).value).toBe(99);
    expect(progressOf({ ...base, processedRecords: 1, estimatedRecords: 0 })).toEqual({ value: 0, text: 'Processing: 1 entry of about 0 entries written' });
    expect(progressOf({ ...base, percent: 150 }).value).toBe(99);
    expect(progressOf({ ...base, status: 'completed', totalRecords: 3 })).toEqual({ value: 100, text: 'Completed: 3 entries written' });
    expect(progressOf({ ...base, status: 'failed', error: { code: 'source_unavailable', message: 'The log store could not be read' } })).toEqual({ value: 0, text: 'Failed: The log store could not be read' });
    expect(progressOf({ ...base, status: 'expired' }).text).toMatch(/^Expired/);
  });

  it('links to http(s) downloads only', () => {
    expect(downloadHref('http://127.0.0.1:8080/downloads/exp_1.csv?token=abc.def')).toBe('http://127.0.0.1:8080/downloads/exp_1.csv?token=abc.def');
    expect(downloadHref('https://dl.example.com/exp_1.csv?token=x')).toBe('https://dl.example.com/exp_1.csv?token=x');
    for (const bad of ['javascript:alert(1)', 'data:text/html,x', '/downloads/exp_1.csv', '', undefined]) expect(downloadHref(bad)).toBeUndefined();
  });

  it('names the file and its size', () => {
    expect(fileName({ exportId: 'exp_1', format: 'ndjson' })).toBe('exp_1.ndjson');
    expect([formatBytes(1), formatBytes(999), formatBytes(1000), formatBytes(1_234_567), formatBytes(45_000_000)]).toEqual(['1 byte', '999 bytes', '1.0 kB', '1.2 MB', '45 MB']);
  });

  it('remembers the exports of this tab, newest first, once each', () => {
    const store = new StartedExports();
    let calls = 0;
    const stop = store.subscribe(() => calls++);
    const e = (id: string) => ({ exportId: id, format: 'csv', description: id, createdAt: base.createdAt });
    store.add(e('exp_1'));
    store.add(e('exp_2'));
    store.add(e('exp_1'));
    expect(store.all().map((x) => x.exportId)).toEqual(['exp_1', 'exp_2']);
    expect(store.get('exp_2')?.description).toBe('exp_2');
    stop();
    store.add(e('exp_3'));
    expect(calls).toBe(3);
  });
});
