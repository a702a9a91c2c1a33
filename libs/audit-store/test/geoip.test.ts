import { GeoIp } from '../src/geoip';

let geo: GeoIp;
beforeAll(async () => {
  geo = await GeoIp.open();
});

test('public IPv4 and IPv6 addresses get city, country, region and coordinates', () => {
  const london = geo.lookup('81.2.69.142');
  expect(london).toMatchObject({ city: 'London', country: 'GB', region: 'England' });
  expect(london!.lat).toBeCloseTo(51.51, 1);
  expect(london!.lng).toBeCloseTo(-0.09, 1);
  expect(geo.lookup('2001:4860:4860::8888')).toMatchObject({ country: expect.stringMatching(/^[A-Z]{2}$/) });
  // An IPv4-mapped IPv6 address is looked up as the IPv4 one.
  expect(geo.lookup('::ffff:81.2.69.142')).toEqual(london);
});

test.each(['127.0.0.1', '::1', '10.1.2.3', '192.168.1.10', '172.20.0.1', '100.64.1.1', '169.254.1.1', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '', 'not-an-ip', '999.1.1.1'])(
  '%p has no location',
  (ip) => {
    expect(geo.lookup(ip)).toBeUndefined();
  },
);
