// The repository's rules (../../eslint.config.mjs, which covers .tsx too) plus React's rules of hooks for the
// console's components.
import reactHooks from 'eslint-plugin-react-hooks';
import root from '../../eslint.config.mjs';

export default [...root, { files: ['src/**/*.{ts,tsx}'], ...reactHooks.configs.flat.recommended }];
