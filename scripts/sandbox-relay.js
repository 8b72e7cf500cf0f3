// Runs inside a deployment's sandbox, before its command, in the sandbox's own network namespace:
// node sandbox-relay.js <port>=<unix socket> ... listens on 127.0.0.1:<port> and forwards each connection to the
// unix socket (bound in from the host, served by the control plane, which enforces every rule). It is not a
// boundary: tenant code runs as the same user and could connect to the sockets itself.
'use strict';
const net = require('node:net');

const pairs = process.argv.slice(2).map((a) => {
  const i = a.indexOf('=');
  return { port: Number(a.slice(0, i)), socket: a.slice(i + 1) };
});
let pending = pairs.length;
for (const { port, socket } of pairs) {
  const server = net.createServer((inside) => {
    const host = net.connect(socket);
    inside.pipe(host).pipe(inside);
    const end = () => {
      inside.destroy();
      host.destroy();
    };
    inside.on('error', end).on('close', end);
    host.on('error', end).on('close', end);
  });
  server.on('error', (err) => {
    process.stderr.write(`sandbox relay: 127.0.0.1:${port}: ${err.message}\n`);
    process.exit(1);
  });
  server.listen(port, '127.0.0.1', () => {
    if (--pending === 0) {
      // The one line the sandbox's start script waits for; stdout is closed after it.
      process.stdout.end('ready\n');
    }
  });
}
