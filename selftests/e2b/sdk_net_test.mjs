// SPDX-License-Identifier: GPL-2.0
//
// sdk_net_test.mjs: sandbox networking through the unmodified E2B SDK
// (npm "e2b"), against cubed with its port proxy.  Run by run_sdk_test.sh
// from a folder where "e2b" is installed, with E2B_API_URL,
// E2B_SANDBOX_URL, E2B_API_KEY, CUBE_TEMPLATE as the other tests, and
//   CUBE_PROXY_PORT=<this machine's port forwarded to cubed's proxy port>
// getHost(port) names "<port>-<id>.localhost:<cubed's proxy port>", which
// node cannot resolve: requests go to 127.0.0.1:CUBE_PROXY_PORT with that
// Host header.
//
// Two sandboxes are left running on purpose, with metadata
// "cube-net-expect": the policy cubed should have set on them; e2b_serve.sh
// in L1 reads their policies back with "cubectl net show" when the run is
// over and compares.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { Sandbox, SandboxNotFoundError, SandboxError } from 'e2b';

const template = process.env.CUBE_TEMPLATE || 'base';
const proxyPort = Number(process.env.CUBE_PROXY_PORT || 43001);
const made = new Set();

// the API's refusal, as the SDK reports it: a SandboxError carrying the
// HTTP status and the server's message (a network failure is a TypeError)
const refused = (status, re) => (e) =>
  e instanceof SandboxError && e.statusCode === status && re.test(e.message);

after(async () => {
  for (const id of made) {
    try { await Sandbox.kill(id); } catch { /* already gone */ }
  }
});

// One request through the proxy; resolves {status, headers, body, closed}.
function request(host, path = '/', headers = {}, timeoutMs = 15_000) {
  return new Promise((resolve, reject) => {
    const s = net.connect(proxyPort, '127.0.0.1');
    let data = '';
    const timer = setTimeout(() => { s.destroy(); reject(new Error('timeout')); },
      timeoutMs);
    s.on('connect', () => {
      let head = `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n`;
      for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
      s.write(head + '\r\n');
    });
    s.on('data', (d) => { data += d.toString('latin1'); });
    s.on('error', (e) => { clearTimeout(timer); reject(e); });
    s.on('close', () => {
      clearTimeout(timer);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(data);
      const i = data.indexOf('\r\n\r\n');
      resolve({ status: m ? Number(m[1]) : 0,
                body: i >= 0 ? data.slice(i + 4) : '' });
    });
  });
}

// Ask until the port answers with something but "nothing listens".
async function whenServing(host, headers = {}, seconds = 90) {
  let last;
  for (let i = 0; i < seconds; i++) {
    try {
      last = await request(host, '/', headers);
      if (last.status && !(last.status === 502 &&
                           /nothing listens/.test(last.body)))
        return last;
    } catch (e) { last = { status: 0, body: String(e) }; }
    await new Promise((r) => setTimeout(r, 1000));
  }
  return last;
}

// python3 -m http.server where the guest's Python has it; the test rootfs
// has python3-minimal (no http module), so else the same listing from a
// few lines on the socket module.
const listingServer = `import os, socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 8000))
s.listen(16)
while True:
    c, _ = s.accept()
    try:
        req = b''
        while b'\\r\\n\\r\\n' not in req:
            d = c.recv(4096)
            if not d:
                break
            req += d
        items = ''.join('<li><a href="%s">%s</a></li>' % (n, n)
                        for n in sorted(os.listdir('.')))
        body = ('<html><body><h1>Directory listing for /</h1><ul>%s</ul>'
                '</body></html>\\n' % items).encode()
        c.sendall(b'HTTP/1.0 200 OK\\r\\nContent-Type: text/html\\r\\n'
                  b'Content-Length: %d\\r\\n\\r\\n' % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()
`;
const httpServer = 'mkdir -p /tmp/www && echo hi > /tmp/www/hello.txt && ' +
  'cd /tmp/www && if python3 -c "import http.server" 2>/dev/null; then ' +
  'exec python3 -m http.server 8000 --bind 0.0.0.0; else ' +
  'exec python3 /tmp/listing.py; fi';

async function startServer(sbx) {
  await sbx.files.write('/tmp/listing.py', listingServer);
  await sbx.commands.run(httpServer, { background: true });
}

test('getHost(port) reaches a server in the sandbox through the proxy',
  async () => {
    const sbx = await Sandbox.create(template, {
      timeoutMs: 600_000, network: { allowPublicTraffic: false } });
    made.add(sbx.sandboxId);
    const host = sbx.getHost(8000);
    assert.match(host, new RegExp(`^8000-${sbx.sandboxId}\\.localhost:\\d+$`));
    assert.ok(sbx.trafficAccessToken, 'a token for non-public ports');
    const info = await sbx.getInfo();
    assert.equal(info.network.allowPublicTraffic, false);
    assert.equal(info.sandboxDomain, host.slice(host.indexOf('.') + 1));

    const tok = { 'e2b-traffic-access-token': sbx.trafficAccessToken };
    await startServer(sbx);
    const r = await whenServing(host, tok);
    assert.equal(r.status, 200, `the proxy answered: ${r.body}`);
    assert.match(r.body, /hello\.txt/);
    // the token is needed, and must be right
    assert.equal((await request(host)).status, 403);
    assert.equal((await request(host, '/', {
      'e2b-traffic-access-token': 'x'.repeat(32) })).status, 403);
    // a port nothing listens on
    const closed = await request(sbx.getHost(8001), '/', tok);
    assert.equal(closed.status, 502);
    assert.match(closed.body, /nothing listens on port 8001/);

    // a connection held open ends when the sandbox does.  The guest's
    // server says "accepted" on each connection it accept()ed, and holds
    // it: that word, come back through the proxy, is the evidence that
    // the connection reached the guest's program (the proxy's own answer,
    // 502 while nothing listens yet, is anything else).
    await sbx.commands.run('exec python3 -c "import socket,time\n' +
      's=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n' +
      's.bind((\'0.0.0.0\', 9000)); s.listen(4)\n' +
      'c=[]\n' +
      'for i in range(2):\n' +
      '    a=s.accept()[0]; a.sendall(b\'accepted.\'); c.append(a)\n' +
      'time.sleep(3600)"',
      { background: true });
    let held, last = '';
    for (let i = 0; i < 60 && !held; i++) {
      held = await new Promise((resolve) => {
        const s = net.connect(proxyPort, '127.0.0.1');
        let got = '';
        const give = (v) => { clearTimeout(timer); resolve(v); };
        s.on('connect', () => s.write(`GET / HTTP/1.1\r\nHost: ${sbx.getHost(9000)}\r\n` +
          `e2b-traffic-access-token: ${sbx.trafficAccessToken}\r\n\r\n`));
        s.on('data', (d) => {
          got += d;
          last = got;
          if (got.startsWith('accepted.')) give(s);
          else if (!'accepted.'.startsWith(got)) { s.destroy(); give(undefined); }
        });
        s.on('error', () => give(undefined));
        s.on('close', () => give(undefined));
        // a bound, not the evidence: no word in 10 s, try again
        const timer = setTimeout(() => { s.destroy(); resolve(undefined); }, 10_000);
      });
      if (!held) await new Promise((r) => setTimeout(r, 500));
    }
    assert.ok(held, `the guest's server accepted a connection to port 9000 (last answer: ${JSON.stringify(last.slice(0, 200))})`);
    const closedAt = new Promise((resolve) => held.on('close', () => resolve(Date.now())));
    const killedAt = Date.now();
    await sbx.kill();
    made.delete(sbx.sandboxId);
    const when = await Promise.race([closedAt,
      new Promise((r) => setTimeout(() => r(0), 10_000))]);
    assert.ok(when, 'the held connection closes when the sandbox is killed');
    assert.ok(when - killedAt < 5000, `closed after ${when - killedAt} ms`);

    // and the sandbox's ports are gone
    const gone = await request(host, '/', tok);
    assert.equal(gone.status, 502);
    assert.match(gone.body, /not running/);
  });

test('allowInternetAccess: false: deny, reported, ports still served',
  async () => {
    const sbx = await Sandbox.create(template, {
      timeoutMs: 900_000, allowInternetAccess: false,
      metadata: { 'cube-net-expect': 'deny:' } });
    // left running whatever happens here: e2b_serve.sh checks its policy
    const info = await sbx.getInfo();
    assert.equal(info.allowInternetAccess, false);
    assert.equal(info.network.allowPublicTraffic, true);
    assert.equal(sbx.trafficAccessToken, undefined);
    await startServer(sbx);
    const r = await whenServing(sbx.getHost(8000));
    assert.equal(r.status, 200, `the proxy answered: ${r.body}`);
  });

test('network lists, updateNetwork, and refusals', async () => {
  const sbx = await Sandbox.create(template, {
    timeoutMs: 900_000, allowInternetAccess: false,
    network: { allowOut: ['1.1.1.1', '8.8.8.0/24'] },
    metadata: { 'cube-net-expect': 'list:allow 0.0.0.0/0;allow ::/0;deny 10.0.0.0/8;deny 203.0.113.7/32' } });
  // left running whatever happens here: e2b_serve.sh checks its policy
  let info = await sbx.getInfo();
  assert.equal(info.allowInternetAccess, false);
  assert.deepEqual(info.network.allowOut, ['1.1.1.1', '8.8.8.0/24']);

  await sbx.updateNetwork({ denyOut: ['10.0.0.0/8', '203.0.113.7'] });
  info = await sbx.getInfo();
  assert.equal(info.allowInternetAccess, undefined);
  assert.deepEqual(info.network.denyOut, ['10.0.0.0/8', '203.0.113.7']);
  assert.equal(info.network.allowOut, undefined);

  // refused, with the entry named; the policy stays
  await assert.rejects(sbx.updateNetwork({ allowOut: ['example.com'] }),
    refused(400, /example\.com/));
  await assert.rejects(sbx.updateNetwork({ denyOut: ['10.0.0.1/8'] }),
    refused(400, /host bits/));
  await assert.rejects(Sandbox.updateNetwork('999999', { denyOut: [] }),
    SandboxNotFoundError);
  info = await sbx.getInfo();
  assert.deepEqual(info.network.denyOut, ['10.0.0.0/8', '203.0.113.7']);

  // nothing is created for a request that cannot be honoured
  const before = (await Sandbox.list().nextItems()).length;
  await assert.rejects(Sandbox.create(template, {
    network: { allowOut: ['*.example.com'] } }), refused(400, /domain names/));
  await assert.rejects(Sandbox.create(template, {
    network: { denyOut: ['1.2.3.4:80'] } }),
    refused(400, /ports are not supported/));
  await assert.rejects(Sandbox.create(template, {
    network: { egressProxy: { address: 'p.example.com:1080' } } }),
    refused(400, /egressProxy/));
  assert.equal((await Sandbox.list().nextItems()).length, before);
});
