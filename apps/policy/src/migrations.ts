import path from 'node:path';

/** The policy schema's numbered SQL migrations (outside src/, the same path from src/ and dist/). */
export const migrationsDir = path.join(__dirname, '..', 'migrations');
