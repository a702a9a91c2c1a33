// The console's lists: a table that scrolls on its own when wide, and on narrow screens shows each row as a
// card with each cell's column name before it (the cells' data-label, styles.css).
import type { ReactNode } from 'react';

export interface Column<T> {
  /** The column's name: its header, and each cell's data-label. */
  label: string;
  /** A header other than the label (a visually hidden one). */
  header?: ReactNode;
  cell: (row: T) => ReactNode;
}

export function DataTable<T>({ label, className = 'list', columns, rows, rowKey }: { label: string; className?: string; columns: Column<T>[]; rows: readonly T[]; rowKey: (row: T) => string }) {
  return (
    <div className="table-wrap">
      <table className={className} aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col">
                {c.header ?? c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)}>
              {columns.map((c) => (
                <td key={c.label} data-label={c.label}>
                  {c.cell(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
