// Types of h3lab-node: createHttp3Server(options, handler).

import { EventEmitter } from 'node:events';
import { Readable, Writable } from 'node:stream';

export interface Http3ServerOptions {
  /** PEM certificate chain (with `key`); without both, a self-signed certificate is generated. */
  cert?: string | Buffer;
  /** PEM private key. */
  key?: string | Buffer;
  /** Serve HTTP/1.1 and HTTP/2 on the same TCP port, with Alt-Svc advertising h3 (default true). */
  dualStack?: boolean;
  /** A handler that has not answered (504), or sent its next body chunk (stream reset), within this many ms is timed out. Default 30000. */
  handlerTimeoutMs?: number;
}

export declare class Http3ServerRequest extends Readable {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  /** '3', '2.0' or '1.1'. */
  readonly httpVersion: string;
  readonly httpVersionMajor: number;
  readonly httpVersionMinor: number;
  /** Lower-case names; on h2 and h3 also the pseudo-headers, as Node's http2 compatibility API has them. */
  readonly headers: Record<string, string | string[]>;
  /** Name, value, name, value, ... as received. */
  readonly rawHeaders: string[];
  readonly authority: string | undefined;
  readonly scheme: string;
  readonly socket: { remoteAddress: string; remotePort: number; encrypted: true };
  /** True once the whole body has been read. */
  complete: boolean;
}

export declare class Http3ServerResponse extends Writable {
  readonly req: Http3ServerRequest;
  statusCode: number;
  statusMessage: string;
  headersSent: boolean;
  setHeader(name: string, value: string | number | readonly string[]): this;
  getHeader(name: string): string | number | readonly string[] | undefined;
  getHeaders(): Record<string, string | number | readonly string[]>;
  getHeaderNames(): string[];
  hasHeader(name: string): boolean;
  removeHeader(name: string): void;
  writeHead(statusCode: number, headers?: Record<string, string | number | readonly string[]> | string[]): this;
  writeHead(statusCode: number, statusMessage: string, headers?: Record<string, string | number | readonly string[]> | string[]): this;
}

export type RequestHandler = (req: Http3ServerRequest, res: Http3ServerResponse) => void | Promise<void>;

export interface AddressInfo {
  address: string;
  family: 'IPv4' | 'IPv6';
  port: number;
}

export interface PerProtocol {
  h1: number;
  h2: number;
  h3: number;
}

export interface ServerStats {
  connectionsOpen: PerProtocol;
  connectionsTotal: PerProtocol;
  /** Requests (streams) answered. */
  requests: PerProtocol;
  requestsInFlight: number;
  zeroRttOffered: number;
  zeroRttAccepted: number;
  zeroRttRejected: number;
  migrations: number;
  quicPacketsSent: number;
  quicPacketsLost: number;
  /** Mean smoothed RTT of closed QUIC connections; null until one has closed. */
  quicRttMeanMs: number | null;
}

export interface SessionEvent {
  protocol: 'h1' | 'h2' | 'h3';
  /** address:port */
  remoteAddress: string;
}

export declare class Http3Server extends EventEmitter {
  /** The certificate (PEM) once listening, for clients that must trust it. */
  certPem: string | null;
  /** Base64 SHA-256 of the certificate's public key, for Chromium's --ignore-certificate-errors-spki-list. */
  spkiSha256: string | null;
  /** Resolves once listening; rejects with an Error when the port is taken or the host is not an IP address. */
  listen(port?: number, host?: string, callback?: () => void): Promise<AddressInfo>;
  listen(port: number, callback: () => void): Promise<AddressInfo>;
  listen(options: { port?: number; host?: string }, callback?: () => void): Promise<AddressInfo>;
  address(): AddressInfo | null;
  stats(): ServerStats;
  /** Stops accepting, sends GOAWAY, lets requests in flight finish, then emits 'close'. */
  close(callback?: () => void): Promise<void>;
  ref(): this;
  unref(): this;

  on(event: 'request', listener: RequestHandler): this;
  on(event: 'session' | 'sessionClose', listener: (session: SessionEvent) => void): this;
  on(event: 'migrate', listener: (move: { from: string; to: string }) => void): this;
  on(event: '0rtt', listener: (outcome: { accepted: boolean }) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
  on(event: 'listening' | 'close', listener: () => void): this;
  on(event: string | symbol, listener: (...args: any[]) => void): this;
}

export declare function createHttp3Server(handler?: RequestHandler): Http3Server;
export declare function createHttp3Server(options: Http3ServerOptions, handler?: RequestHandler): Http3Server;
