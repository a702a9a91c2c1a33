import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { checkKey, type ByteRange, type ObjectStore, type ObjectWriter } from './port';

const PARTIAL = '.partial-';

/**
 * Objects as files under one directory (local profile). A writer fills `<key>.partial-<random>` and renames
 * it to the key when finished (fsynced first), so a reader never sees half a file and a writer killed
 * midway leaves only a partial file, which sweep() removes.
 */
export function createLocalObjectStore(dir: string): ObjectStore {
  const file = (key: string) => path.join(dir, checkKey(key));
  return {
    kind: 'local',
    async create(key: string): Promise<ObjectWriter> {
      const target = file(key);
      await mkdir(path.dirname(target), { recursive: true });
      const partial = `${target}${PARTIAL}${randomBytes(6).toString('hex')}`;
      const fh = await open(partial, 'wx', 0o600);
      let size = 0;
      let closed = false;
      const close = async () => {
        if (closed) return;
        closed = true;
        await fh.close();
      };
      return {
        async write(chunk) {
          let off = 0;
          while (off < chunk.length) off += (await fh.write(chunk, off, chunk.length - off)).bytesWritten;
          size += chunk.length;
        },
        async finish() {
          try {
            await fh.sync();
          } catch (err) {
            await close().catch(() => undefined); // the fsync error is the one to report
            throw err;
          }
          await close();
          await rename(partial, target);
          return { size };
        },
        async abort() {
          await close().catch(() => undefined);
          await rm(partial, { force: true });
        },
      };
    },
    async stat(key) {
      try {
        const s = await stat(file(key));
        return s.isFile() ? { size: s.size } : undefined;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    async read(key: string, range?: ByteRange): Promise<Readable> {
      const stream = createReadStream(file(key), range ? { start: range.start, end: range.end } : {});
      // Open errors (a missing file) surface here rather than on the first read.
      await new Promise<void>((resolve, reject) => {
        stream.once('open', () => resolve());
        stream.once('error', reject);
      });
      return stream;
    },
    async delete(key) {
      await rm(file(key), { force: true });
    },
    async sweep(olderThanMs) {
      let removed = 0;
      const cutoff = Date.now() - olderThanMs;
      const walk = async (d: string): Promise<void> => {
        const entries = await readdir(d, { withFileTypes: true }).catch(() => []);
        for (const e of entries) {
          const p = path.join(d, e.name);
          if (e.isDirectory()) await walk(p);
          else if (e.name.includes(PARTIAL)) {
            const s = await stat(p).catch(() => undefined);
            if (s && s.mtimeMs < cutoff) {
              await rm(p, { force: true });
              removed++;
            }
          }
        }
      };
      await walk(dir);
      return removed;
    },
    close: async () => undefined,
  };
}
