/**
 * A small evaluator of Kubernetes NetworkPolicy semantics (networking.k8s.io/v1) for one namespace: is a
 * connection from a source to a destination pod and port allowed by the policies that select both ends?
 * Enough of the API for our manifests: pod and namespace selectors (matchLabels, matchExpressions), ipBlock
 * with except, numeric ports with protocol. A named port or endPort is refused loudly rather than guessed.
 */
import type { K8sObject } from './tools';

export type Labels = Record<string, string>;

interface Selector {
  matchLabels?: Labels;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/** A pod in the policies' namespace, a pod in another namespace (with that namespace's labels), or an address. */
export type Endpoint = { pod: Labels; namespace?: Labels } | { ip: string };

interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
  ipBlock?: { cidr: string; except?: string[] };
}

interface Rule {
  ports?: { protocol?: string; port?: number | string; endPort?: number }[];
  from?: Peer[];
  to?: Peer[];
}

export function matches(selector: Selector | undefined, labels: Labels): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (e.operator === 'In' && !(has && e.values!.includes(labels[e.key]!))) return false;
    if (e.operator === 'NotIn' && has && e.values!.includes(labels[e.key]!)) return false;
  }
  return true;
}

const ipv4 = (ip: string) => ip.split('.').reduce((n, part) => n * 256 + Number(part), 0);
export function inCidr(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split('/');
  if (base!.includes(':') || ip.includes(':')) return false;
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipv4(ip) / size) === Math.floor(ipv4(base!) / size);
}

function peerMatches(peer: Peer, end: Endpoint): boolean {
  if (peer.ipBlock) {
    if (!('ip' in end)) return false;
    return inCidr(end.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c) => inCidr(end.ip, c));
  }
  if (!('pod' in end)) return false;
  if (peer.namespaceSelector) {
    // Another namespace (or this one, if its labels match: ours are not given, so only others count here).
    if (!end.namespace || !matches(peer.namespaceSelector, end.namespace)) return false;
    return matches(peer.podSelector, end.pod);
  }
  // podSelector alone: pods of the policy's own namespace.
  return !end.namespace && matches(peer.podSelector, end.pod);
}

function portMatches(rule: Rule, port: number, protocol: string): boolean {
  if (!rule.ports || rule.ports.length === 0) return true;
  return rule.ports.some((p) => {
    if (p.endPort !== undefined || typeof p.port === 'string') throw new Error('named ports and endPort are not modelled');
    return (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port);
  });
}

function ruleAllows(rule: Rule, peers: Peer[] | undefined, end: Endpoint, port: number, protocol: string): boolean {
  const peerOk = !peers || peers.length === 0 || peers.some((p) => peerMatches(p, end));
  return peerOk && portMatches(rule, port, protocol);
}

const policiesOf = (objs: K8sObject[]) => objs.filter((o) => o.kind === 'NetworkPolicy');
const types = (p: K8sObject): string[] => p.spec.policyTypes ?? (p.spec.egress ? ['Ingress', 'Egress'] : ['Ingress']);

/** Ingress to `pod` of this namespace from `from` on port/protocol. Unselected pods accept everything. */
export function ingressAllowed(objs: K8sObject[], pod: Labels, from: Endpoint, port: number, protocol = 'TCP'): boolean {
  const selecting = policiesOf(objs).filter((p) => types(p).includes('Ingress') && matches(p.spec.podSelector, pod));
  if (selecting.length === 0) return true;
  return selecting.some((p) => ((p.spec.ingress ?? []) as Rule[]).some((r) => ruleAllows(r, r.from, from, port, protocol)));
}

/** Egress from `pod` of this namespace to `to` on port/protocol. */
export function egressAllowed(objs: K8sObject[], pod: Labels, to: Endpoint, port: number, protocol = 'TCP'): boolean {
  const selecting = policiesOf(objs).filter((p) => types(p).includes('Egress') && matches(p.spec.podSelector, pod));
  if (selecting.length === 0) return true;
  return selecting.some((p) => ((p.spec.egress ?? []) as Rule[]).some((r) => ruleAllows(r, r.to, to, port, protocol)));
}

/** A connection inside the namespace needs the source's egress and the destination's ingress. */
export function connectionAllowed(objs: K8sObject[], from: Labels, to: Labels, port: number, protocol = 'TCP'): boolean {
  return egressAllowed(objs, from, { pod: to }, port, protocol) && ingressAllowed(objs, to, { pod: from }, port, protocol);
}
