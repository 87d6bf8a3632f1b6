'use strict';
// h3lab-node: createHttp3Server(options, handler). The transport (TLS, QUIC,
// HTTP/3, and HTTP/1.1 and HTTP/2 on the same TCP port) is h3lab's Rust
// server; this file gives its requests the shape of Node's http2
// compatibility API. JavaScript is entered once per request head and once
// per body chunk.

const { EventEmitter } = require('node:events');
const { Readable, Writable } = require('node:stream');
const path = require('node:path');

const { NativeServer } = loadNative();

function loadNative() {
  const triple = `${process.platform}-${process.arch}-gnu`;
  const file = path.join(__dirname, `h3lab-node.${triple}.node`);
  try {
    return require(file);
  } catch (err) {
    const why = err.code === 'MODULE_NOT_FOUND' ? 'it is not in the package' : err.message;
    throw new Error(
      `h3lab-node: no native module for ${process.platform}-${process.arch} (${file}: ${why}). ` +
        'The package carries one for linux-x64 (glibc) only. To build one for this machine, ' +
        'run `npm ci && npm run build` in the node/ directory of the h3lab repository ' +
        '(needs Rust, https://rustup.rs) and copy the h3lab-node.*.node it writes next to this file.',
    );
  }
}

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

function checkHeader(name, value) {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    throw new TypeError(`Header name must be a valid HTTP token ["${name}"]`);
  }
  if (value === undefined) {
    throw new TypeError(`Invalid value "undefined" for header "${name}"`);
  }
  for (const v of Array.isArray(value) ? value : [value]) {
    if (INVALID_VALUE.test(String(v))) {
      throw new TypeError(`Invalid character in header content ["${name}"]`);
    }
  }
}

/** The request: a Readable of the body, with the head's fields. */
class Http3ServerRequest extends Readable {
  constructor(native, head) {
    super();
    this._native = native;
    this._id = head.id;
    this.method = head.method;
    this.url = head.url;
    this.httpVersion = head.httpVersion;
    const [major, minor] = head.httpVersion.split('.');
    this.httpVersionMajor = Number(major);
    this.httpVersionMinor = Number(minor || 0);
    this.authority = head.authority || undefined;
    this.scheme = head.scheme;
    this.rawHeaders = head.headers;
    this.headers = Object.create(null);
    if (this.httpVersionMajor >= 2) {
      // As Node's http2 compatibility API shows them.
      this.headers[':method'] = head.method;
      this.headers[':path'] = head.url;
      this.headers[':scheme'] = head.scheme;
      if (head.authority) this.headers[':authority'] = head.authority;
    }
    for (let i = 0; i < head.headers.length; i += 2) {
      const [name, value] = [head.headers[i], head.headers[i + 1]];
      const prior = this.headers[name];
      if (name === 'set-cookie') {
        this.headers[name] = prior ? [...prior, value] : [value];
      } else if (name === 'cookie' && prior !== undefined) {
        this.headers[name] = `${prior}; ${value}`;
      } else {
        this.headers[name] = prior === undefined ? value : `${prior}, ${value}`;
      }
    }
    if (this.headers.host === undefined && head.authority) this.headers.host = head.authority;
    this.socket = { remoteAddress: head.remoteAddress, remotePort: head.remotePort, encrypted: true };
    this.complete = false;
  }

  _read() {
    this._native.read(this._id).then(
      (chunk) => {
        if (chunk === null) {
          this.complete = true;
          this.push(null);
        } else {
          this.push(chunk);
        }
      },
      (err) => this.destroy(err),
    );
  }
}

/** The response: a Writable of the body, with Node's header methods. */
class Http3ServerResponse extends Writable {
  constructor(native, req, report) {
    super();
    this._report = report;
    this._native = native;
    this._id = req._id;
    this.req = req;
    this.statusCode = 200;
    this.statusMessage = '';
    this._headers = new Map();
    this._headSent = false; // handed to the native side
    this._nativeEnded = false;
    this.headersSent = false; // as Node means it: writeHead was called or the head went out
  }

  setHeader(name, value) {
    if (this.headersSent) throw new Error('Cannot set headers after they are sent to the client');
    checkHeader(name, value);
    this._headers.set(name.toLowerCase(), [name, value]);
    return this;
  }

  getHeader(name) {
    const entry = this._headers.get(String(name).toLowerCase());
    return entry && entry[1];
  }

  getHeaders() {
    const out = Object.create(null);
    for (const [key, [, value]] of this._headers) out[key] = value;
    return out;
  }

  getHeaderNames() {
    return [...this._headers.keys()];
  }

  hasHeader(name) {
    return this._headers.has(String(name).toLowerCase());
  }

  removeHeader(name) {
    if (this.headersSent) throw new Error('Cannot remove headers after they are sent to the client');
    this._headers.delete(String(name).toLowerCase());
  }

  writeHead(statusCode, statusMessage, headers) {
    if (this.headersSent) throw new Error('Cannot write headers after they are sent to the client');
    if (typeof statusMessage !== 'string') [headers, statusMessage] = [statusMessage, undefined];
    const code = Number(statusCode);
    if (!Number.isInteger(code) || code < 200 || code > 999) {
      throw new RangeError(`Invalid status code: ${statusCode}`);
    }
    this.statusCode = code;
    if (statusMessage !== undefined) this.statusMessage = statusMessage;
    if (Array.isArray(headers)) {
      for (let i = 0; i < headers.length; i += 2) this.setHeader(headers[i], headers[i + 1]);
    } else if (headers) {
      for (const name of Object.keys(headers)) this.setHeader(name, headers[name]);
    }
    this.headersSent = true;
    return this;
  }

  _flatHeaders() {
    const flat = [];
    for (const [, [name, value]] of this._headers) {
      for (const v of Array.isArray(value) ? value : [value]) flat.push(name, String(v));
    }
    return flat;
  }

  /** Hands the head (and a first or only chunk) to the native side; false if the request is gone. */
  _sendHead(body, end) {
    const code = Number(this.statusCode);
    if (!Number.isInteger(code) || code < 200 || code > 999) {
      throw new RangeError(`Invalid status code: ${this.statusCode}`);
    }
    this._headSent = true;
    this.headersSent = true;
    try {
      this._native.respond(this._id, code, this._flatHeaders(), body, end);
      return true;
    } catch {
      return false; // the client went away or the handler timed out
    }
  }

  _write(chunk, encoding, callback) {
    if (!this._headSent) {
      if (!this._sendHead(chunk, false)) return this._gone(callback);
      return callback();
    }
    this._native.write(this._id, chunk).then(
      () => callback(),
      () => this._gone(callback),
    );
  }

  _final(callback) {
    if (!this._nativeEnded) {
      this._nativeEnded = true;
      if (!this._headSent) this._sendHead(null, true);
      else this._native.end(this._id);
    }
    callback();
  }

  /** The stream is reset; an error is reported to the server, not thrown at the handler. */
  _destroy(err, callback) {
    if (!this._nativeEnded) {
      this._nativeEnded = true;
      this._native.abort(this._id);
    }
    if (err) this._report(err);
    callback();
  }

  /** The stream ended under the handler: stop quietly, as Node's own responses do. */
  _gone(callback) {
    this._nativeEnded = true;
    callback();
    this.destroy();
  }

  end(chunk, encoding, callback) {
    if (typeof chunk === 'function') [callback, chunk] = [chunk, undefined];
    else if (typeof encoding === 'function') [callback, encoding] = [encoding, undefined];
    // A whole response in one call: the head and body cross once.
    if (!this._headSent && !this.writableEnded && this.writableLength === 0) {
      const body = chunk == null ? null : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk, encoding);
      this._nativeEnded = true;
      if (!this._sendHead(body, true)) {
        this.destroy();
        return this;
      }
      return super.end(callback);
    }
    return super.end(chunk, encoding, callback);
  }
}

/** The server: h3 on UDP, and h1 and h2 on the same TCP port unless dualStack is false. */
class Http3Server extends EventEmitter {
  constructor(options, handler) {
    super();
    if (typeof options === 'function') [handler, options] = [options, {}];
    options = options || {};
    const pem = (name) => {
      const v = options[name];
      if (v === undefined || v === null) return undefined;
      if (typeof v === 'string') return v;
      if (Buffer.isBuffer(v)) return v.toString();
      throw new TypeError(`options.${name} must be a PEM string or Buffer`);
    };
    if (options.dualStack !== undefined && typeof options.dualStack !== 'boolean') {
      throw new TypeError('options.dualStack must be a boolean');
    }
    const timeout = options.handlerTimeoutMs;
    if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0 && timeout < 2 ** 32)) {
      throw new TypeError('options.handlerTimeoutMs must be a positive integer (milliseconds)');
    }
    this._native = new NativeServer(
      { cert: pem('cert'), key: pem('key'), dualStack: options.dualStack, handlerTimeoutMs: timeout },
      (head) => this._onRequest(head),
      (event) => this._onEvent(event),
    );
    if (handler !== undefined) {
      if (typeof handler !== 'function') throw new TypeError('the request handler must be a function');
      this.on('request', handler);
    }
    this._address = null;
    this._keepAlive = null;
    this.certPem = null;
    this.spkiSha256 = null;
  }

  _onRequest(head) {
    const req = new Http3ServerRequest(this._native, head);
    const res = new Http3ServerResponse(this._native, req, (err) => this._report(err));
    for (const handler of this.listeners('request')) {
      try {
        const result = handler.call(this, req, res);
        if (result && typeof result.then === 'function') {
          result.then(undefined, (err) => this._handlerFailed(err, res));
        }
      } catch (err) {
        this._handlerFailed(err, res);
      }
    }
  }

  /** Emitted as 'error' if anyone listens; logged otherwise, never thrown. */
  _report(err) {
    if (this.listenerCount('error') > 0) this.emit('error', err);
    else console.error('h3lab-node: the request handler failed:', err);
  }

  /** A handler threw: reported, and answered with 500 if nothing was sent. */
  _handlerFailed(err, res) {
    this._report(err);
    if (!res._headSent && !res.writableEnded) {
      res.statusCode = 500;
      res._headers.clear();
      res.setHeader('content-type', 'text/plain; charset=utf-8');
      res.end('internal server error\n');
    } else if (!res.writableFinished) {
      res.destroy();
    }
  }

  _onEvent(event) {
    switch (event.kind) {
      case 'session':
      case 'sessionClose':
        this.emit(event.kind, { protocol: event.protocol, remoteAddress: event.address });
        break;
      case 'migrate':
        this.emit('migrate', { from: event.from, to: event.to });
        break;
      case '0rtt':
        this.emit('0rtt', { accepted: event.accepted });
        break;
    }
  }

  /**
   * listen(port, host, cb), listen(port, cb) or listen({ port, host }, cb).
   * Resolves with the address; rejects (and emits 'error' if anyone
   * listens for it) when the port is taken or the host is bad.
   */
  listen(port, host, callback) {
    if (typeof port === 'object' && port !== null) [port, host, callback] = [port.port, port.host, host];
    if (typeof port === 'function') [callback, port, host] = [port, 0, undefined];
    if (typeof host === 'function') [callback, host] = [host, undefined];
    if (port === undefined || port === null) port = 0;
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      return Promise.reject(new RangeError(`port must be an integer from 0 to 65535, not ${port}`));
    }
    if (host === 'localhost') host = '127.0.0.1';
    const listening = this._native.listen(port, host || '127.0.0.1').then((info) => {
      this._address = { address: info.address, family: info.family, port: info.port };
      this.certPem = info.certPem || null;
      this.spkiSha256 = info.spkiSha256 || null;
      this._keepAlive = setInterval(() => {}, 2 ** 31 - 1);
      this.emit('listening');
      if (callback) callback();
      return this._address;
    });
    if (this.listenerCount('error') > 0) {
      listening.catch((err) => this.emit('error', err));
    }
    return listening;
  }

  address() {
    return this._address;
  }

  stats() {
    return this._native.stats();
  }

  /** Stops accepting, lets requests in flight finish, then emits 'close'. */
  close(callback) {
    const closing = this._native.close().then(() => {
      clearInterval(this._keepAlive);
      this._keepAlive = null;
      this._address = null;
      this.emit('close');
      if (callback) callback();
    });
    return closing;
  }

  ref() {
    if (this._keepAlive) this._keepAlive.ref();
    return this;
  }

  unref() {
    if (this._keepAlive) this._keepAlive.unref();
    return this;
  }
}

function createHttp3Server(options, handler) {
  return new Http3Server(options, handler);
}

module.exports = { createHttp3Server, Http3Server, Http3ServerRequest, Http3ServerResponse };
