import { countLogsRoute } from './count-logs';
import { createExportRoute } from './create-export';
import { getExportRoute } from './get-export';
import { getLogRoute } from './get-log';
import { listLogsRoute } from './list-logs';
import { searchLogsRoute } from './search-logs';
import { chainKeysRoute, verifyLogsRoute } from './verify-logs';

// verify and keys before /logs/:id, which would take their names as ids.
export const logRoutes = [listLogsRoute, searchLogsRoute, countLogsRoute, createExportRoute, getExportRoute, verifyLogsRoute, chainKeysRoute, getLogRoute];
