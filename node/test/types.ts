// Compiled (not run) by types.test.js: the typings accept what the README
// and Node's http2 handlers do, and reject misuse.
import { createHttp3Server, Http3ServerRequest, Http3ServerResponse, ServerStats } from '..';

const handler = (req: Http3ServerRequest, res: Http3ServerResponse): void => {
  const version: string = req.httpVersion;
  const authority = req.headers[':authority'];
  res.statusCode = 200;
  res.setHeader('content-type', 'text/plain');
  res.writeHead(200, { 'x-version': version });
  if (!res.write(`authority ${String(authority)}\n`)) res.once('drain', () => res.end());
};

async function main(): Promise<void> {
  const server = createHttp3Server({ dualStack: true, handlerTimeoutMs: 1000 }, handler);
  server.on('migrate', ({ from, to }) => console.log(from, to));
  server.on('0rtt', ({ accepted }) => console.log(accepted));
  const address = await server.listen(0, '127.0.0.1');
  const port: number = address.port;
  const stats: ServerStats = server.stats();
  const rtt: number | null = stats.quicRttMeanMs;
  console.log(port, rtt, stats.requests.h3);
  await server.close();
  // @ts-expect-error dualStack is a boolean
  createHttp3Server({ dualStack: 'yes' });
}

void main;
