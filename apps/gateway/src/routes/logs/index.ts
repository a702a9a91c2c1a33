import { createExportRoute } from './create-export';
import { getExportRoute } from './get-export';
import { getLogRoute } from './get-log';
import { listLogsRoute } from './list-logs';
import { searchLogsRoute } from './search-logs';

export const logRoutes = [listLogsRoute, searchLogsRoute, createExportRoute, getExportRoute, getLogRoute];
