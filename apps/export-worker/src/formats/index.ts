export { csvCell, csvMetadataCells, memoByText, metadataOf } from './csv';
