import { describe, expect, it } from 'vitest';
import { isAllowedAddress, isAllowedHttpHost } from './policy.js';
import type { OutboundPolicy } from './policy.js';

const production = (allowPrivate: string[] = [], allowHttpHosts: string[] = []): OutboundPolicy => ({
  profile: 'production',
  allowHttpHosts,
  allowPrivate,
});
const local = (allowPrivate: string[] = []): OutboundPolicy => ({ profile: 'local', allowHttpHosts: [], allowPrivate });

describe('isAllowedAddress', () => {
  it('allows public addresses under every profile', () => {
    expect(isAllowedAddress('8.8.8.8', production())).toBe(true);
    expect(isAllowedAddress('2606:4700:4700::1111', production())).toBe(true);
  });

  it('refuses every non-public kind under production', () => {
    for (const ip of [
      '10.0.0.1',
      '127.0.0.1',
      '::1',
      '169.254.1.1',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '198.18.0.1',
      'fd00::1',
      '::ffff:10.0.0.1',
    ]) {
      expect(isAllowedAddress(ip, production()), ip).toBe(false);
    }
  });

  it('allows non-public addresses under local, except metadata', () => {
    expect(isAllowedAddress('127.0.0.1', local())).toBe(true);
    expect(isAllowedAddress('10.1.2.3', local())).toBe(true);
    expect(isAllowedAddress('169.254.169.254', local())).toBe(false);
    expect(isAllowedAddress('fd00:ec2::254', local())).toBe(false);
    expect(isAllowedAddress('::ffff:169.254.169.254', local())).toBe(false);
  });

  it('allows addresses inside a listed range', () => {
    const policy = production(['127.0.0.1/32', '10.0.0.0/8', 'fd00:1234::/32']);
    expect(isAllowedAddress('127.0.0.1', policy)).toBe(true);
    expect(isAllowedAddress('127.0.0.2', policy)).toBe(false);
    expect(isAllowedAddress('10.200.0.5', policy)).toBe(true);
    expect(isAllowedAddress('::ffff:10.0.0.5', policy)).toBe(true);
    expect(isAllowedAddress('192.168.0.1', policy)).toBe(false);
    expect(isAllowedAddress('fd00:1234::9', policy)).toBe(true);
    expect(isAllowedAddress('fd00:1235::9', policy)).toBe(false);
  });

  it('allows a plain listed address', () => {
    expect(isAllowedAddress('192.168.1.10', production(['192.168.1.10']))).toBe(true);
    expect(isAllowedAddress('::1', production(['::1']))).toBe(true);
  });

  it('matches listed hostnames against the hostname before resolution', () => {
    const policy = production(['Internal.Example.']);
    expect(isAllowedAddress('10.0.0.5', policy, 'internal.example')).toBe(true);
    expect(isAllowedAddress('10.0.0.5', policy, 'other.example')).toBe(false);
    expect(isAllowedAddress('10.0.0.5', policy)).toBe(false);
  });

  it('unlocks metadata only when listed exactly, never by a wide range', () => {
    expect(isAllowedAddress('169.254.169.254', production(['169.254.0.0/16']))).toBe(false);
    expect(isAllowedAddress('169.254.169.254', local(['0.0.0.0/0']))).toBe(false);
    expect(isAllowedAddress('169.254.169.254', production(['169.254.169.254/32']))).toBe(true);
    expect(isAllowedAddress('169.254.169.254', production(['169.254.169.254']))).toBe(true);
    expect(
      isAllowedAddress('169.254.169.254', production(['metadata.google.internal']), 'metadata.google.internal'),
    ).toBe(true);
  });

  it('rejects a malformed range', () => {
    expect(() => isAllowedAddress('10.0.0.1', production(['10.0.0.0/33']))).toThrow(/allowPrivate/);
    expect(() => isAllowedAddress('10.0.0.1', production(['10.0.0/8']))).toThrow(/allowPrivate/);
  });
});

describe('isAllowedHttpHost', () => {
  it('allows every host under local', () => {
    expect(isAllowedHttpHost(new URL('http://anything.example/'), local())).toBe(true);
  });

  it('allows listed hosts, with or without a port', () => {
    const policy = production([], ['127.0.0.1', 'api.example:8080', '[::1]:9000', 'legacy.example:80']);
    expect(isAllowedHttpHost(new URL('http://127.0.0.1:1234/'), policy)).toBe(true);
    expect(isAllowedHttpHost(new URL('http://API.example:8080/'), policy)).toBe(true);
    expect(isAllowedHttpHost(new URL('http://api.example:8081/'), policy)).toBe(false);
    expect(isAllowedHttpHost(new URL('http://api.example/'), policy)).toBe(false);
    expect(isAllowedHttpHost(new URL('http://[::1]:9000/'), policy)).toBe(true);
    expect(isAllowedHttpHost(new URL('http://legacy.example/'), policy)).toBe(true);
    expect(isAllowedHttpHost(new URL('http://other.example/'), policy)).toBe(false);
  });
});
