import net from 'node:net';
import { leakedSince, openHandles, waitForNoLeaks } from '../src';

describe('leak detection', () => {
  it('reports a server left listening and clears once it is closed', async () => {
    const baseline = openHandles();
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    expect(leakedSince(baseline).join()).toMatch(/TCPServerWrap/i);
    expect(await waitForNoLeaks(baseline, 100)).not.toEqual([]);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await waitForNoLeaks(baseline)).toEqual([]);
  });

  it('reports a client socket left open', async () => {
    const server = net.createServer((socket) => socket.on('error', () => undefined));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const baseline = openHandles();
    const socket = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    expect(leakedSince(baseline).join()).toMatch(/TCPSocketWrap|TCPWRAP/i);
    socket.destroy();
    server.close();
    await waitForNoLeaks(baseline);
  });
});
