import { TurnBatch } from './turn-batch';

test('items added in one turn run together, in order, each caller getting its own result', async () => {
  const runs: number[][] = [];
  const batch = new TurnBatch<number, string>(async (items) => {
    runs.push(items);
    return items.map((i) => `r${i}`);
  });
  const first = await Promise.all([1, 2, 3].map((i) => batch.add(i)));
  expect(first).toEqual(['r1', 'r2', 'r3']);
  expect(await batch.add(4)).toBe('r4');
  expect(runs).toEqual([[1, 2, 3], [4]]);
});

test('a turn with more than `max` items runs in parts of at most `max`', async () => {
  const runs: number[][] = [];
  const batch = new TurnBatch<number, number>(async (items) => (runs.push(items), items), 2);
  expect(await Promise.all([1, 2, 3, 4, 5].map((i) => batch.add(i)))).toEqual([1, 2, 3, 4, 5]);
  expect(runs).toEqual([[1, 2], [3, 4], [5]]);
});

test('a failed run fails each of its items (and only those); a throwing run or a short answer too', async () => {
  let calls = 0;
  const batch = new TurnBatch<number, number>(async (items) => {
    calls++;
    if (items.includes(2)) throw new Error('write failed');
    return items;
  }, 2);
  const settled = await Promise.allSettled([1, 2, 3].map((i) => batch.add(i)));
  expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected', 'fulfilled']);
  expect(calls).toBe(2);
  const throwing = new TurnBatch<number, number>(() => {
    throw new Error('sync');
  });
  await expect(throwing.add(1)).rejects.toThrow('sync');
  const short = new TurnBatch<number, number>(async () => [1]);
  await expect(Promise.all([short.add(1), short.add(2)])).rejects.toThrow('1 results for 2 items');
});
