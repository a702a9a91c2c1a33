import { fromBinary, toBinary } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, FileDescriptorSetSchema, type DescriptorProto, type FileDescriptorProto } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * gRPC server reflection (grpc.reflection.v1 and v1alpha) served from FileDescriptorSets that buf builds from
 * our .proto files, so file names, imports (well-known types included) and symbols are exactly the sources'.
 * This is what `grpcurl list|describe` and calls without local .proto files rely on.
 */
export class DescriptorIndex {
  private readonly files = new Map<string, { proto: FileDescriptorProto; bytes: Uint8Array }>();
  private readonly symbols = new Map<string, string>();

  constructor(descriptorSetPaths: string[]) {
    for (const file of descriptorSetPaths) {
      const set = fromBinary(FileDescriptorSetSchema, readFileSync(file));
      for (const proto of set.file) {
        this.files.set(proto.name, { proto, bytes: toBinary(FileDescriptorProtoSchema, proto) });
        this.index(proto);
      }
    }
  }

  private index(file: FileDescriptorProto): void {
    const prefix = file.package ? `${file.package}.` : '';
    const add = (name: string) => this.symbols.set(name, file.name);
    const messages = (list: DescriptorProto[], scope: string) => {
      for (const m of list) {
        add(scope + m.name);
        for (const e of m.enumType) add(`${scope}${m.name}.${e.name}`);
        messages(m.nestedType, `${scope}${m.name}.`);
      }
    };
    messages(file.messageType, prefix);
    for (const e of file.enumType) add(prefix + e.name);
    for (const s of file.service) {
      add(prefix + s.name);
      for (const m of s.method) add(`${prefix}${s.name}.${m.name}`);
    }
  }

  /** The file and everything it imports, dependencies included once. */
  fileWithDependencies(name: string): Uint8Array[] | undefined {
    if (!this.files.has(name)) return undefined;
    const out: Uint8Array[] = [];
    const seen = new Set<string>();
    const visit = (n: string) => {
      const f = this.files.get(n);
      if (!f || seen.has(n)) return;
      seen.add(n);
      out.push(f.bytes);
      f.proto.dependency.forEach(visit);
    };
    visit(name);
    return out;
  }

  fileOfSymbol(symbol: string): string | undefined {
    return this.symbols.get(symbol.replace(/^\./, ''));
  }
}

interface ReflectionRequest {
  host?: string;
  file_by_filename?: string;
  file_containing_symbol?: string;
  file_containing_extension?: unknown;
  all_extension_numbers_of_type?: string;
  list_services?: string;
  message_request?: string;
}

const reflectionProtoDir = path.join(path.dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');

/** Adds grpc.reflection.v1 and v1alpha ServerReflection to `server`, listing `services`. */
export function addReflection(server: grpc.Server, index: DescriptorIndex, services: string[]): void {
  const definitions = protoLoader.loadSync(
    ['grpc/reflection/v1/reflection.proto', 'grpc/reflection/v1alpha/reflection.proto'],
    { includeDirs: [reflectionProtoDir], keepCase: true, longs: String, enums: String, defaults: false, oneofs: true },
  );
  const answer = (req: ReflectionRequest) => {
    const files = (list: Uint8Array[] | undefined, what: string) =>
      list
        ? { file_descriptor_response: { file_descriptor_proto: list.map((b) => Buffer.from(b)) } }
        : { error_response: { error_code: grpc.status.NOT_FOUND, error_message: `${what} not found` } };
    switch (req.message_request) {
      case 'list_services':
        return { list_services_response: { service: services.map((name) => ({ name })) } };
      case 'file_by_filename':
        return files(index.fileWithDependencies(req.file_by_filename!), `file ${req.file_by_filename}`);
      case 'file_containing_symbol': {
        const file = index.fileOfSymbol(req.file_containing_symbol!);
        return files(file ? index.fileWithDependencies(file) : undefined, `symbol ${req.file_containing_symbol}`);
      }
      default:
        // Extensions are not used by these protocols.
        return { error_response: { error_code: grpc.status.NOT_FOUND, error_message: 'extensions are not supported' } };
    }
  };
  const handler: grpc.handleBidiStreamingCall<ReflectionRequest, unknown> = (call) => {
    call.on('data', (req: ReflectionRequest) => {
      call.write({ valid_host: req.host ?? '', original_request: req, ...answer(req) });
    });
    call.on('end', () => call.end());
    call.on('error', () => undefined);
  };
  for (const name of ['grpc.reflection.v1.ServerReflection', 'grpc.reflection.v1alpha.ServerReflection']) {
    const def = definitions[name] as grpc.ServiceDefinition;
    server.addService(def, { ServerReflectionInfo: handler });
  }
}
