// A plain HTTP proxy in front of a test's `queues serve`, for what a real deployment's proxy
// may do to the receive stream: refuse WebSocket upgrades, or drop an upgraded connection.
// It records the requests it forwards.
import { createServer, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface ProxyOptions {
  /** Answer every upgrade 502, as a proxy that does not pass WebSockets. */
  refuseUpgrades?: boolean;
  /** Drop the first upgraded connection once the service has sent it a batch. */
  cutFirstStream?: boolean;
}

export interface Proxy {
  url: string;
  /** "METHOD path" of each plain request forwarded. */
  requests: string[];
  /** Upgrades asked for. */
  upgrades: number;
  close(): Promise<void>;
}

export async function startProxy(target: string, o: ProxyOptions = {}): Promise<Proxy> {
  const t = new URL(target);
  const port = Number(t.port);
  const sockets = new Set<Socket>();
  const p: Proxy = { url: '', requests: [], upgrades: 0, close: async () => {} };
  const srv = createServer((req, res) => {
    p.requests.push(`${req.method} ${req.url}`);
    const out = request({ host: t.hostname, port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  srv.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  srv.on('upgrade', (req, sock: Socket, head: Buffer) => {
    const n = ++p.upgrades;
    if (o.refuseUpgrades) {
      sock.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return;
    }
    const up = connect(port, t.hostname, () => {
      let raw = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < req.rawHeaders.length; i += 2) raw += `${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}\r\n`;
      up.write(`${raw}\r\n`);
      if (head.length > 0) up.write(head);
      if (o.cutFirstStream && n === 1) {
        let seen = '';
        up.on('data', (d: Buffer) => {
          seen += d.toString('latin1');
          if (seen.includes('"messages"')) {
            up.destroy();
            sock.destroy();
          }
        });
      }
      up.pipe(sock);
      sock.pipe(up);
    });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.on('error', () => sock.destroy());
    sock.on('error', () => up.destroy());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  p.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      srv.close(() => r());
    });
  return p;
}
