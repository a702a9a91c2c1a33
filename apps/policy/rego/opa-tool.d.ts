// Types for opa-tool.js (plain CommonJS so it runs with `node` and no build step).
export declare const MISSING: string;
export declare const REPO_ROOT: string;
export declare const WASM_FILE: string;
export declare const ENTRYPOINTS: readonly string[];
export declare function findOpa(env?: NodeJS.ProcessEnv): string | null;
export declare function opaVersion(opa: string): string;
export declare function buildWasm(opa: string): Buffer;
export declare function runOpaTest(opa: string, extraArgs?: string[]): { status: number | null; output: string };
export declare function extractFromTarGz(tarGz: Buffer, wanted: string): Buffer;
