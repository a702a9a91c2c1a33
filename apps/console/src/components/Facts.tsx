// A thing's facts as a description list: term, value, in a grid (styles.css .facts).
import type { ReactNode } from 'react';

export function Fact({ term, className, children }: { term: ReactNode; className?: string; children: ReactNode }) {
  return (
    <div className={className}>
      <dt>{term}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** `[term, value, className of its row]`; false, null or undefined for a fact that does not apply. */
export type FactItem = readonly [term: ReactNode, value: ReactNode, className?: string];

export function Facts({ items, wide = false }: { items: readonly (FactItem | false | null | undefined)[]; wide?: boolean }) {
  return (
    <dl className={wide ? 'facts facts-wide' : 'facts'}>
      {items.map((item, i) =>
        item ? (
          <Fact key={i} term={item[0]} className={item[2]}>
            {item[1]}
          </Fact>
        ) : null,
      )}
    </dl>
  );
}
