export { csvCell, csvMetadataCells, memoByText, metadataOf } from './csv';
export { jsonEntryEnd, metadataJson } from './json';
